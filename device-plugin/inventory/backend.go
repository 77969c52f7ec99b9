// Package inventory is nomad-device-accel's backend for devices described
// in an HCL file instead of probed from hardware: for laptops, CI, demos,
// e2e tests and simulated clusters. The file is re-read every fingerprint
// period, so editing it (typically its unhealthy list) changes what Nomad
// sees without restarting anything. See docs/device-plugin.md for the
// format.
package inventory

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// BackendName is the backend's name in the plugin config.
const BackendName = "inventory"

// Backend reads devices from an inventory file.
type Backend struct {
	path   string
	seed   string
	now    func() time.Time
	logger hclog.Logger
	// lastUnmatched avoids logging the same stale unhealthy entry forever.
	lastUnmatched string
	// lastScriptErr does the same for a bad telemetry script (telemetry.go).
	lastScriptErr string
}

// Option configures a Backend.
type Option func(*Backend)

// WithClock sets the clock synthetic stats are computed from.
func WithClock(now func() time.Time) Option { return func(b *Backend) { b.now = now } }

// WithLogger sets the backend's logger.
func WithLogger(l hclog.Logger) Option { return func(b *Backend) { b.logger = l } }

// New returns a backend for the inventory file at path. The file is not
// read until the first Fingerprint.
func New(path string, opts ...Option) *Backend {
	base := filepath.Base(path)
	b := &Backend{
		path:   path,
		seed:   strings.TrimSuffix(base, filepath.Ext(base)),
		now:    time.Now,
		logger: hclog.NewNullLogger(),
	}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Factory opens the inventory backend for a plugin config.
func Factory(logger hclog.Logger) accel.Factory {
	return func(cfg *accel.Config) (accel.Backend, error) {
		if cfg.InventoryFile == "" {
			return nil, fmt.Errorf("inventory_file is not set: %w", accel.ErrNotDetected)
		}
		return New(cfg.InventoryFile, WithLogger(logger.Named(BackendName))), nil
	}
}

// Name implements accel.Backend.
func (b *Backend) Name() string { return BackendName }

// Close implements accel.Backend.
func (b *Backend) Close() error { return nil }

// Fingerprint re-reads the file and returns its devices. A missing or
// malformed file gives an *accel.FingerprintError whose Source is the file
// and, for syntax or schema errors, the line and column.
func (b *Backend) Fingerprint(context.Context) ([]accel.Device, error) {
	inv, err := b.Load()
	if err != nil {
		return nil, err
	}
	devs := inv.Devices()
	withDeviceDir(devs, inv.DeviceDir)
	unmatched := applyHealth(devs, inv.Unhealthy, b.path)
	if s := strings.Join(unmatched, ","); s != b.lastUnmatched {
		if s != "" {
			b.logger.Warn("unhealthy entries name no device", "file", b.path, "entries", s)
		}
		b.lastUnmatched = s
	}
	return devs, nil
}

// Load reads and parses the file.
func (b *Backend) Load() (*Inventory, error) {
	src, err := os.ReadFile(b.path)
	if err != nil {
		return nil, &accel.FingerprintError{Backend: BackendName, Source: b.path, Err: err}
	}
	inv, diags := Parse(b.path, src, b.seed)
	if diags.HasErrors() {
		return nil, diagError(b.path, diags)
	}
	return inv, nil
}

// diagError turns the first error diagnostic into a FingerprintError that
// names file:line,col; the others are appended to its message.
func diagError(path string, diags hcl.Diagnostics) error {
	var first *hcl.Diagnostic
	var msgs []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		if first == nil {
			first = d
		}
		msgs = append(msgs, diagText(d))
	}
	src := path
	if first.Subject != nil {
		src = fmt.Sprintf("%s:%d,%d", first.Subject.Filename, first.Subject.Start.Line, first.Subject.Start.Column)
	}
	msg := first.Summary
	if first.Detail != "" {
		msg += ": " + first.Detail
	}
	if len(msgs) > 1 {
		msg += fmt.Sprintf(" (and %d more: %s)", len(msgs)-1, strings.Join(msgs[1:], "; "))
	}
	return &accel.FingerprintError{Backend: BackendName, Source: src, Err: errors.New(msg)}
}

func diagText(d *hcl.Diagnostic) string {
	s := d.Summary
	if d.Subject != nil {
		s = fmt.Sprintf("line %d: %s", d.Subject.Start.Line, s)
	}
	return s
}

// Stats returns plausible synthetic statistics: each device's utilization
// follows a slow wave with a phase of its own (derived from its ID), and
// memory, power and temperature follow utilization. An unhealthy device
// reports one uncorrected ECC error. Same clock, same numbers. A scripted
// telemetry file next to the inventory overrides them (telemetry.go).
func (b *Backend) Stats(_ context.Context, devs []accel.Device) (map[string]accel.Stats, error) {
	now := b.now()
	out := make(map[string]accel.Stats, len(devs))
	for _, d := range devs {
		out[d.ID] = Synthetic(d, now)
	}
	b.script(out)
	return out, nil
}

// Synthetic computes a device's synthetic stats at time t.
func Synthetic(d accel.Device, t time.Time) accel.Stats {
	h := fnv.New32a()
	_, _ = h.Write([]byte(d.ID))
	phase := float64(h.Sum32()%3600) / 3600 * 2 * math.Pi
	wave := (math.Sin(2*math.Pi*float64(t.Unix()%300)/300+phase) + 1) / 2 // 0..1, period 5 min
	util := math.Round(5+85*wave) / 1
	power := float64(d.PowerLimitW)
	if power == 0 {
		power = 300
	}
	s := accel.Stats{
		UtilizationPct: util,
		MemoryUsedMiB:  int64(float64(d.MemoryMiB) * (0.05 + 0.85*wave)),
		MemoryTotalMiB: d.MemoryMiB,
		PowerW:         math.Round(power * (0.15 + 0.8*wave)),
		TemperatureC:   math.Round(32 + 45*wave),
		Timestamp:      t,
	}
	if !d.Healthy {
		s.ECCErrors = 1
	}
	return s
}
