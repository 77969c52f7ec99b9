package inventory

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// FuzzReadTelemetry feeds arbitrary bytes as the scripted telemetry file:
// never a panic; an accepted script holds only values within range, and
// applying it to stats keeps memory used within the device's total.
func FuzzReadTelemetry(f *testing.F) {
	f.Add([]byte(`{"devices":{"GPU-0":{"utilization":3,"memory_used_mib":40000,"processes":1}},"missing":["GPU-1"]}`))
	f.Add([]byte(`{"devices":{"GPU-0":{"utilization":101}}}`))
	f.Add([]byte(`{"devices":{"GPU-0":{"memory_used_mib":-1}}}`))
	f.Add([]byte(`{"devices":null,"missing":null}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "inv.telemetry.json")
		must.NoError(t, os.WriteFile(path, data, 0o600))
		tel, err := ReadTelemetry(path)
		if err != nil {
			must.Nil(t, tel)
			return
		}
		stats := map[string]accel.Stats{}
		for id, d := range tel.Devices {
			must.True(t, d.Utilization >= 0 && d.Utilization <= 100, must.Sprintf("%s utilization %v", id, d.Utilization))
			must.GreaterEq(t, 0, d.MemoryUsedMiB)
			stats[id] = accel.Stats{MemoryTotalMiB: 1024}
		}
		tel.Apply(stats)
		for id, s := range stats {
			must.LessEq(t, s.MemoryTotalMiB, s.MemoryUsedMiB, must.Sprintf("%s memory used", id))
		}
	})
}
