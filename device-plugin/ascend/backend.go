// Package ascend is nomad-device-accel's backend for Huawei Ascend NPUs. It
// runs `npu-smi info` through an injected command runner and parses its
// table, so tests replay recorded outputs of real 910B and 310P machines.
package ascend

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// BackendName is the backend's name in the plugin config.
const BackendName = "ascend"

// Runner runs a command and returns its standard output.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// ExecRunner runs commands with os/exec, each bounded by timeout.
func ExecRunner(timeout time.Duration) Runner {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return exec.CommandContext(ctx, name, args...).Output()
	}
}

// Backend fingerprints NPUs with npu-smi.
type Backend struct {
	path   string
	run    Runner
	parse  func([]byte) ([]Chip, error) // ParseInfo; replaced in tests
	now    func() time.Time
	logger hclog.Logger
}

// New returns a backend that runs npu-smi at path through run.
func New(path string, run Runner, logger hclog.Logger) *Backend {
	return &Backend{path: path, run: run, parse: ParseInfo, now: time.Now, logger: logger}
}

// Factory finds npu-smi on PATH (or at npu_smi_path); without it the
// backend is not detected.
func Factory(logger hclog.Logger) accel.Factory {
	return func(cfg *accel.Config) (accel.Backend, error) {
		path, err := exec.LookPath(cfg.NPUSmiPath)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", err, accel.ErrNotDetected)
		}
		return New(path, ExecRunner(30*time.Second), logger.Named(BackendName)), nil
	}
}

// Name implements accel.Backend.
func (b *Backend) Name() string { return BackendName }

// Close implements accel.Backend.
func (b *Backend) Close() error { return nil }

// info runs and parses `npu-smi info`.
func (b *Backend) info(ctx context.Context) ([]Chip, error) {
	out, err := b.run(ctx, b.path, "info")
	if err != nil {
		return nil, &accel.FingerprintError{Backend: BackendName, Source: b.path + " info", Err: err}
	}
	chips, err := b.parseGuarded(out)
	if err != nil {
		return nil, &accel.FingerprintError{Backend: BackendName, Source: b.path + " info", Err: err}
	}
	return chips, nil
}

// ErrParserPanic is wrapped by the error of an npu-smi output the parser
// panicked on.
var ErrParserPanic = errors.New("npu-smi parser panic")

// parseGuarded parses npu-smi's output and turns a parser panic into an
// error. ParseInfo checks every index and is fuzzed, so this should never
// fire; it is here because npu-smi's layout changes between driver
// releases and the output is read every fingerprint period: a parser bug
// must cost this backend its devices (reported unhealthy with the error,
// like any other bad output), not the whole plugin process.
func (b *Backend) parseGuarded(out []byte) (chips []Chip, err error) {
	defer func() {
		if r := recover(); r != nil {
			b.logger.Error("npu-smi parser panicked; please report this output", "panic", r,
				"output", firstLine(out), "stack", string(debug.Stack()))
			chips, err = nil, fmt.Errorf("%w: %v", ErrParserPanic, r)
		}
	}()
	return b.parse(out)
}

// Fingerprint lists the chips. Health "OK" and "Warning" are schedulable;
// anything else ("Alarm", "Critical", …) is unhealthy. All chips of one
// node share an island (HCCS) and topology "hccs".
func (b *Backend) Fingerprint(ctx context.Context) ([]accel.Device, error) {
	chips, err := b.info(ctx)
	if err != nil {
		return nil, err
	}
	devs := make([]accel.Device, 0, len(chips))
	for _, c := range chips {
		d := accel.Device{
			ID:        strconv.Itoa(c.Device),
			Vendor:    accel.VendorHuawei,
			Type:      accel.TypeNPU,
			Model:     ModelName(c.Name),
			Index:     c.Device,
			MemoryMiB: c.MemTotalMiB,
			PCIBusID:  c.BusID,
			NUMANode:  -1,
			Topology:  "hccs",
			Island:    0,
			Healthy:   c.Health == "OK" || c.Health == "Warning",
		}
		if !d.Healthy {
			d.HealthDesc = fmt.Sprintf("npu-smi health %s (NPU %d chip %d)", c.Health, c.NPU, c.Chip)
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// Stats reads AI Core utilization, memory, power and temperature from the
// same table.
func (b *Backend) Stats(ctx context.Context, devs []accel.Device) (map[string]accel.Stats, error) {
	chips, err := b.info(ctx)
	if err != nil {
		return nil, err
	}
	now := b.now()
	out := map[string]accel.Stats{}
	for _, c := range chips {
		out[strconv.Itoa(c.Device)] = accel.Stats{
			UtilizationPct: c.AICorePct,
			MemoryUsedMiB:  c.MemUsedMiB,
			MemoryTotalMiB: c.MemTotalMiB,
			PowerW:         c.PowerW,
			TemperatureC:   c.TemperatureC,
			Timestamp:      now,
		}
	}
	return out, nil
}
