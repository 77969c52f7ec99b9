package inventory

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/shoenig/test/must"
)

func TestTelemetryScript(t *testing.T) {
	inv := writeInventory(t, "node.hcl", `gpu "H100" { count = 3 }`)
	b := New(inv)
	devs := fingerprint(t, b)
	write := func(src string) { must.NoError(t, os.WriteFile(TelemetryPath(inv), []byte(src), 0o644)) }

	// no script: synthetic stats for every device
	st, err := b.Stats(context.Background(), devs)
	must.NoError(t, err)
	must.MapLen(t, 3, st)
	must.Nil(t, st[devs[0].ID].Processes)

	write(fmt.Sprintf(`{"devices": {%q: {"utilization": 2, "memory_used_mib": 30000, "processes": 1}}, "missing": [%q]}`, devs[0].ID, devs[1].ID))
	st, err = b.Stats(context.Background(), devs)
	must.NoError(t, err)
	must.MapLen(t, 2, st)
	must.Eq(t, 2.0, st[devs[0].ID].UtilizationPct)
	must.Eq(t, int64(30000), st[devs[0].ID].MemoryUsedMiB)
	must.Eq(t, int64(1), *st[devs[0].ID].Processes)
	_, missing := st[devs[1].ID]
	must.False(t, missing)

	// re-read each period: the next edit applies at once
	write(fmt.Sprintf(`{"devices": {%q: {"utilization": 90, "memory_used_mib": 30000}}}`, devs[0].ID))
	st, _ = b.Stats(context.Background(), devs)
	must.Eq(t, 90.0, st[devs[0].ID].UtilizationPct)
	must.MapLen(t, 3, st)

	// a bad script is ignored, synthetic stats stay
	write(`{"devices": {"x": {"utilization": 400}}}`)
	st, err = b.Stats(context.Background(), devs)
	must.NoError(t, err)
	must.MapLen(t, 3, st)
	write(`not json`)
	_, err = ReadTelemetry(TelemetryPath(inv))
	must.ErrorContains(t, err, "parsing telemetry script")
}
