//go:build !linux || !cgo

// Package nvml is nomad-device-accel's backend for NVIDIA GPUs. NVML needs
// Linux and cgo; this build has neither, so the backend reports itself as
// not detected.
package nvml

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// BackendName is the backend's name in the plugin config.
const BackendName = "nvml"

// Factory reports accel.ErrNotDetected: NVML is unavailable in this build.
func Factory(hclog.Logger) accel.Factory {
	return func(*accel.Config) (accel.Backend, error) {
		return nil, fmt.Errorf("nvml needs linux and cgo: %w", accel.ErrNotDetected)
	}
}
