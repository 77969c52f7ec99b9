package ckpt

import (
	"fmt"

	"github.com/opencontainers/runc/libcontainer/cgroups/fs2"
	lconfigs "github.com/opencontainers/runc/libcontainer/configs"
	ldevices "github.com/opencontainers/runc/libcontainer/devices"
)

// setDeviceFilterV2 replaces the eBPF device filter of the v2 cgroup dir
// with one built from rules, through runc's cgroup manager (the one the
// executor used to install the first filter); only the devices are set.
func setDeviceFilterV2(dir string, rules []*ldevices.Rule) error {
	cg := &lconfigs.Cgroup{Resources: &lconfigs.Resources{Devices: rules}}
	m, err := fs2.NewManager(cg, dir)
	if err != nil {
		return fmt.Errorf("cgroup v2 %s: %w", dir, err)
	}
	if err := m.Set(cg.Resources); err != nil {
		return fmt.Errorf("cgroup v2 %s: setting the device filter: %w", dir, err)
	}
	return nil
}
