package ckpt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/nomad/drivers/shared/executor"
	"github.com/hashicorp/nomad/plugins/drivers"
	ldevices "github.com/opencontainers/runc/libcontainer/devices"
	"github.com/opencontainers/runc/libcontainer/specconv"
)

// Nomad 1.6.1's isolating executor creates the reserved device nodes in
// the task's /dev but builds its device cgroup from the default rules
// only (runc's specconv adds a rule per device; Nomad's executor does
// not), so a task could not open its own GPU. The driver adds the rules:
//
//   - cgroup v1: before launch it creates a devices cgroup of the task's
//     own (deny all, then the executor's defaults and the reserved
//     devices) and hands it to the executor as the cgroup its
//     create-runtime hook moves the task into before the task's program
//     starts, which the executor otherwise uses for the cpuset the client
//     chose; the driver moves the task into that cpuset right after
//     launch. No moment exists where the task runs with the wrong devices.
//   - cgroup v2: right after launch it replaces the device filter of the
//     task's cgroup with one that also allows the reserved devices; until
//     then (milliseconds) the task cannot open them.

// deviceCgroup is the device cgroup work for one isolated task.
type deviceCgroup struct {
	root   string // the cgroup filesystem, /sys/fs/cgroup
	rules  []*ldevices.Rule
	dir    string // v1: the task's devices cgroup, once created
	cpuset string // v1: the cpuset cgroup the client chose, if any
	// setV2 installs rules as the device filter of a v2 cgroup dir.
	setV2 func(dir string, rules []*ldevices.Rule) error
}

// newDeviceCgroup returns the device work for a task's reserved devices,
// nil when it reserved none.
func newDeviceCgroup(root string, devs []*drivers.DeviceConfig) (*deviceCgroup, error) {
	if len(devs) == 0 {
		return nil, nil
	}
	g := &deviceCgroup{root: root, setV2: setDeviceFilterV2}
	var reserved []ldevices.Rule
	for _, d := range devs {
		dev, err := ldevices.DeviceFromPath(d.HostPath, d.Permissions)
		if err != nil {
			return nil, fmt.Errorf("reserved device %s: %w", d.HostPath, err)
		}
		reserved = append(reserved, dev.Rule)
	}
	g.rules = deviceRules(reserved)
	return g, nil
}

// deviceRules is the executor's default rules followed by an allowance
// for each reserved device. DeviceFromPath describes a node; its rule is
// not yet an allowance. v1 does not care (every rule is written to
// devices.allow), but v2's filter takes a rule with Allow false as a deny
// and refuses it under the defaults' "c *:* m" wildcard: the task could
// not open its GPU (seen on an H200 host with cgroup v2).
func deviceRules(reserved []ldevices.Rule) []*ldevices.Rule {
	var rules []*ldevices.Rule
	for _, d := range specconv.AllowedDevices {
		rule := d.Rule
		rules = append(rules, &rule)
	}
	for i := range reserved {
		rule := reserved[i]
		rule.Allow = true
		rules = append(rules, &rule)
	}
	return rules
}

// v2 says whether the host runs the unified (v2) hierarchy.
func (g *deviceCgroup) v2() bool {
	_, err := os.Stat(filepath.Join(g.root, "cgroup.controllers"))
	return err == nil
}

// beforeLaunch creates the v1 devices cgroup named name and returns the
// resources to launch with: a copy of res whose cpuset path is that
// cgroup. On v2 it returns res unchanged.
func (g *deviceCgroup) beforeLaunch(name string, res *drivers.Resources) (*drivers.Resources, error) {
	if g.v2() {
		return res, nil
	}
	g.dir = filepath.Join(g.root, "devices", name)
	if err := os.Mkdir(g.dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("creating devices cgroup %s: %w", g.dir, err)
	}
	if err := writeRule(g.dir, "devices.deny", "a"); err != nil {
		return nil, err
	}
	for _, r := range g.rules {
		if err := writeRule(g.dir, "devices.allow", r.CgroupString()); err != nil {
			return nil, err
		}
	}
	out := drivers.Resources{}
	if res != nil {
		out = *res
	}
	linux := drivers.LinuxResources{}
	if out.LinuxResources != nil {
		linux = *out.LinuxResources
	}
	g.cpuset, linux.CpusetCgroupPath = linux.CpusetCgroupPath, g.dir
	out.LinuxResources = &linux
	return &out, nil
}

// afterLaunch finishes what beforeLaunch began for the launched pid.
func (g *deviceCgroup) afterLaunch(procRoot string, pid int) error {
	if !g.v2() {
		if g.cpuset == "" {
			return nil
		}
		return writeRule(g.cpuset, "cgroup.procs", strconv.Itoa(pid))
	}
	paths, err := readProcCgroup(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return err
	}
	p, ok := paths[""]
	if !ok || p == "/" {
		return errors.New("cgroup v2: the task is not in a cgroup of its own")
	}
	return g.setV2(filepath.Join(g.root, p), g.rules)
}

// remove removes the v1 devices cgroup once the task is gone.
func (g *deviceCgroup) remove() error {
	if g == nil || g.dir == "" {
		return nil
	}
	if err := os.Remove(g.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing devices cgroup %s: %w", g.dir, err)
	}
	return nil
}

// writeRule writes one line to a cgroup control file.
func writeRule(dir, file, line string) error {
	p := filepath.Join(dir, file)
	// No O_CREATE: a missing control file means the controller is absent.
	// O_APPEND is what `echo >>` uses; cgroup files take it as a write.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", line, p, err)
	}
	return nil
}

// devicesCgroupOf names a task's v1 devices cgroup.
func devicesCgroupOf(cfg *drivers.TaskConfig) string { return cgroupName(cfg.AllocID, cfg.Name) }

// launchWithDevices launches cmd, giving an isolated task's reserved
// devices their cgroup rules; the returned deviceCgroup (nil when there is
// nothing to undo) is removed with the task.
func (d *Driver) launchWithDevices(exec executor.Executor, cmd *executor.ExecCommand, cfg *drivers.TaskConfig, emit func(event)) (*executor.ProcessState, *deviceCgroup, error) {
	if !d.settings.isolated() {
		ps, err := exec.Launch(cmd)
		return ps, nil, err
	}
	g, err := newDeviceCgroup(defaultCgroupRoot, cmd.Devices)
	if err != nil || g == nil {
		if err != nil {
			return nil, nil, err
		}
		ps, err := exec.Launch(cmd)
		return ps, nil, err
	}
	if cmd.Resources, err = g.beforeLaunch(devicesCgroupOf(cfg), cmd.Resources); err != nil {
		_ = g.remove()
		return nil, nil, err
	}
	ps, err := exec.Launch(cmd)
	if err != nil {
		_ = g.remove()
		return nil, nil, err
	}
	if err := g.afterLaunch(defaultProcRoot, ps.Pid); err != nil {
		d.logger.Warn("reserved devices: finishing their cgroup rules", "pid", ps.Pid, "error", err)
		emit(warningEvent("reserved devices may not be usable: %v", err))
	}
	return ps, g, nil
}

// recoveredDevices finds the v1 devices cgroup StartTask made for a task
// it started isolated, so it is removed with the task after a restart.
func recoveredDevices(cfg *drivers.TaskConfig, isolated bool) *deviceCgroup {
	if !isolated {
		return nil
	}
	dir := filepath.Join(defaultCgroupRoot, "devices", devicesCgroupOf(cfg))
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return nil
	}
	return &deviceCgroup{root: defaultCgroupRoot, dir: dir}
}
