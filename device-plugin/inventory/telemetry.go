package inventory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// Scripted telemetry: a JSON file next to the inventory file
// (gpus.hcl → gpus.telemetry.json), re-read at every stats period, sets
// chosen devices' utilization, memory used and processes, or makes their
// stats go missing, so idle detection runs end to end without hardware.
// Devices it does not name keep their synthetic stats. See docs/idle.md.
//
//	{"devices": {"GPU-3": {"utilization": 1, "memory_used_mib": 30000, "processes": 1}},
//	 "missing": ["GPU-7"]}

// TelemetryPath is the scripted telemetry file of an inventory file.
func TelemetryPath(inventory string) string {
	return strings.TrimSuffix(inventory, filepath.Ext(inventory)) + ".telemetry.json"
}

// Telemetry is the scripted telemetry file's content.
type Telemetry struct {
	Devices map[string]DeviceTelemetry `json:"devices"`
	// Missing devices report no stats at all (a telemetry dropout).
	Missing []string `json:"missing"`
}

// DeviceTelemetry is one device's scripted values.
type DeviceTelemetry struct {
	Utilization   float64 `json:"utilization"`
	MemoryUsedMiB int64   `json:"memory_used_mib"`
	Processes     *int64  `json:"processes"`
}

// ReadTelemetry reads a scripted telemetry file; a file that does not exist
// is no script (nil, nil).
func ReadTelemetry(path string) (*Telemetry, error) {
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading telemetry script: %w", err)
	}
	var t Telemetry
	if err := json.Unmarshal(src, &t); err != nil {
		return nil, fmt.Errorf("parsing telemetry script %s: %w", path, err)
	}
	for id, d := range t.Devices {
		if d.Utilization < 0 || d.Utilization > 100 || d.MemoryUsedMiB < 0 || (d.Processes != nil && *d.Processes < 0) {
			return nil, fmt.Errorf("telemetry script %s: device %s: utilization must be 0..100, memory and processes not negative", path, id)
		}
	}
	return &t, nil
}

// Apply overrides stats with the script: named devices take its values,
// missing devices are removed.
func (t *Telemetry) Apply(stats map[string]accel.Stats) {
	if t == nil {
		return
	}
	for id, d := range t.Devices {
		s, ok := stats[id]
		if !ok {
			continue
		}
		s.UtilizationPct, s.MemoryUsedMiB, s.Processes = d.Utilization, d.MemoryUsedMiB, d.Processes
		if s.MemoryTotalMiB > 0 && s.MemoryUsedMiB > s.MemoryTotalMiB {
			s.MemoryUsedMiB = s.MemoryTotalMiB
		}
		stats[id] = s
	}
	for _, id := range t.Missing {
		delete(stats, id)
	}
}

// script applies the backend's telemetry file, if any. A bad file is
// logged (once per distinct error) and ignored: synthetic stats stay.
func (b *Backend) script(stats map[string]accel.Stats) {
	t, err := ReadTelemetry(TelemetryPath(b.path))
	if err != nil {
		if msg := err.Error(); msg != b.lastScriptErr {
			b.logger.Warn("ignoring telemetry script", "error", err)
			b.lastScriptErr = msg
		}
		return
	}
	b.lastScriptErr = ""
	t.Apply(stats)
}
