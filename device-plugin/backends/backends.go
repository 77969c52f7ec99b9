// Package backends lists every backend built into nomad-device-accel, so
// the plugin binary and the probe wire the same set.
package backends

import (
	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/device-plugin/accel"
	"github.com/allot-sh/allot/device-plugin/ascend"
	"github.com/allot-sh/allot/device-plugin/inventory"
	"github.com/allot-sh/allot/device-plugin/nvml"
)

// All returns a factory per backend name.
func All(logger hclog.Logger) map[string]accel.Factory {
	return map[string]accel.Factory{
		inventory.BackendName: inventory.Factory(logger),
		nvml.BackendName:      nvml.Factory(logger),
		ascend.BackendName:    ascend.Factory(logger),
	}
}
