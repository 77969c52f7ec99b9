package ascend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// fixtureRunner replays a recorded npu-smi output and records the calls.
func fixtureRunner(t *testing.T, name string) (Runner, *[]string) {
	t.Helper()
	out, err := os.ReadFile(filepath.Join("testdata", name))
	must.NoError(t, err)
	var calls []string
	return func(_ context.Context, cmd string, args ...string) ([]byte, error) {
		calls = append(calls, cmd+" "+args[0])
		return out, nil
	}, &calls
}

func newBackend(t *testing.T, fixture string) *Backend {
	run, _ := fixtureRunner(t, fixture)
	b := New("/usr/local/sbin/npu-smi", run, hclog.NewNullLogger())
	b.now = func() time.Time { return time.Unix(1700000000, 0) }
	return b
}

func TestFingerprint910B(t *testing.T) {
	b := newBackend(t, "910b.txt")
	devs, err := b.Fingerprint(context.Background())
	must.NoError(t, err)
	must.Len(t, 8, devs)
	for i, d := range devs {
		must.Eq(t, "huawei", d.Vendor)
		must.Eq(t, "npu", d.Type)
		must.Eq(t, "Ascend910B", d.Model)
		must.Eq(t, i, d.Index)
		must.Eq(t, int64(65536), d.MemoryMiB)
		must.True(t, d.Healthy)
	}
	must.Eq(t, "0", devs[0].ID)
	must.Eq(t, "0000:C1:00.0", devs[0].PCIBusID)
	res := accel.Reservation(devs[2:4])
	must.Eq(t, "2,3", res.Envs["ASCEND_VISIBLE_DEVICES"])
	stats, err := b.Stats(context.Background(), devs)
	must.NoError(t, err)
	s := stats["1"]
	must.Eq(t, 12.0, s.UtilizationPct)
	must.Eq(t, int64(3148), s.MemoryUsedMiB)
	must.Eq(t, 92.0, s.PowerW)
	must.Eq(t, 37.0, s.TemperatureC)
}

func TestFingerprint310PChipsAreDevices(t *testing.T) {
	b := newBackend(t, "310p.txt")
	devs, err := b.Fingerprint(context.Background())
	must.NoError(t, err)
	must.Len(t, 4, devs)
	for i, d := range devs {
		must.Eq(t, "Ascend310P", d.Model)
		must.Eq(t, i, d.Index, must.Sprint("the Device column numbers /dev/davinci"))
		must.Eq(t, int64(44280), d.MemoryMiB)
	}
	must.Eq(t, "0000:02:00.0", devs[3].PCIBusID)
	stats, err := b.Stats(context.Background(), devs)
	must.NoError(t, err)
	must.Eq(t, 0.0, stats["2"].PowerW, must.Sprint("NA power reads as 0"))
	must.Eq(t, 5.0, stats["2"].UtilizationPct)
	must.Eq(t, int64(1590), stats["2"].MemoryUsedMiB)
}

func TestUnhealthyChip(t *testing.T) {
	devs, err := newBackend(t, "910b-unhealthy.txt").Fingerprint(context.Background())
	must.NoError(t, err)
	for i, d := range devs {
		switch i {
		case 3:
			must.False(t, d.Healthy)
			must.Eq(t, "npu-smi health Critical (NPU 3 chip 0)", d.HealthDesc)
		default:
			must.True(t, d.Healthy, must.Sprintf("chip %d (Warning is still schedulable)", i))
		}
	}
}

func TestBadOutputNamesTheReason(t *testing.T) {
	tests := map[string]string{
		"garbage.txt": `unrecognised output (no NPU table): "dcmi model initialized failed`,
		"bad-row.txt": `line 10: NPU id "x1" is not a number`,
	}
	for fixture, want := range tests {
		t.Run(fixture, func(t *testing.T) {
			_, err := newBackend(t, fixture).Fingerprint(context.Background())
			var fe *accel.FingerprintError
			must.True(t, errors.As(err, &fe))
			must.Eq(t, "/usr/local/sbin/npu-smi info", fe.Source)
			must.StrContains(t, err.Error(), want)
		})
	}
	t.Run("command fails", func(t *testing.T) {
		b := New("npu-smi", func(context.Context, string, ...string) ([]byte, error) {
			return nil, errors.New("exit status 255")
		}, hclog.NewNullLogger())
		_, err := b.Fingerprint(context.Background())
		must.ErrorContains(t, err, "ascend: npu-smi info: exit status 255")
	})
	t.Run("bad memory cell", func(t *testing.T) {
		out := []byte("| NPU Name | Health | Power(W) Temp(C) |\n| Chip | Bus-Id | AICore(%) Memory-Usage(MB) HBM-Usage(MB) |\n" +
			"| 0 910B3 | OK | 90 30 0 / 0 |\n| 0 | 0000:C1:00.0 | 0 0 / 0 lots / 65536 |\n")
		_, err := ParseInfo(out)
		must.ErrorContains(t, err, `line 4: NPU 0 chip 0: memory usage "lots / 65536" is not numeric`)
	})
}

func TestModelName(t *testing.T) {
	for in, want := range map[string]string{
		"910B3": "Ascend910B", "910B": "Ascend910B", "310P3": "Ascend310P", "910": "Ascend910",
		"910ProB": "Ascend910", "Ascend910B4": "Ascend910B", "": "AscendUnknown", "X1": "AscendX1",
	} {
		must.Eq(t, want, ModelName(in), must.Sprint(in))
	}
}

func TestFactoryNotDetectedWithoutNPUSmi(t *testing.T) {
	cfg := accel.DefaultConfig()
	cfg.NPUSmiPath = "/nonexistent/npu-smi"
	_, err := Factory(hclog.NewNullLogger())(cfg)
	must.True(t, errors.Is(err, accel.ErrNotDetected))
}
