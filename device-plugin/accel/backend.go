package accel

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Backend finds devices of one kind. The plugin calls Fingerprint once per
// fingerprint period and Stats once per stats interval, never concurrently
// with itself.
type Backend interface {
	// Name is the backend's config name: "nvml", "ascend" or "inventory".
	Name() string
	// Fingerprint returns every device the backend sees now, with its
	// health. An error means the backend could not tell (unreadable file,
	// unparsable tool output); the plugin then keeps the last devices it
	// knew and marks them unhealthy with the error.
	Fingerprint(ctx context.Context) ([]Device, error)
	// Stats returns statistics for the given devices, keyed by device ID.
	Stats(ctx context.Context, devices []Device) (map[string]Stats, error)
	// Close releases the backend's resources.
	Close() error
}

// ErrNotDetected is returned by a Factory when its hardware or tool is not
// present, so "detect" skips it quietly.
var ErrNotDetected = errors.New("backend not detected")

// Factory opens a backend for a plugin config.
type Factory func(cfg *Config) (Backend, error)

// UnknownDeviceError is returned by Reserve for device IDs the plugin does
// not know (never fingerprinted, or vanished since).
type UnknownDeviceError struct {
	IDs []string
}

func (e *UnknownDeviceError) Error() string {
	return fmt.Sprintf("unknown device ids: %s", strings.Join(e.IDs, ", "))
}

// FingerprintError is what a backend returns when its input is bad; Source
// names the file (with line) or the command whose output was rejected.
type FingerprintError struct {
	Backend string
	Source  string
	Err     error
}

func (e *FingerprintError) Error() string {
	if e.Source == "" {
		return fmt.Sprintf("%s: %v", e.Backend, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.Backend, e.Source, e.Err)
}

func (e *FingerprintError) Unwrap() error { return e.Err }
