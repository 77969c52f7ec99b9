package accel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/plugins/base"
	"github.com/hashicorp/nomad/plugins/device"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/device-plugin/accel"
	"github.com/allot-sh/allot/device-plugin/ascend"
)

const a100Pairs = `
seed = "pairs"
driver_version = "550.54.15"
gpu "A100" {
  count              = 4
  memory_mib         = 40960
  compute_capability = "8.0"
  topology           = "nvlink"
  islands            = [[0, 1], [2, 3]]
  numa_nodes         = [0, 0, 1, 1]
}
npu "Ascend910B" {
  count      = 2
  memory_mib = 65536
}
`

func writeFile(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "inv.hcl")
	must.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	return p
}

func newPlugin(fakes ...*fakeBackend) *accel.Plugin {
	return accel.New(hclog.NewNullLogger(), factories(fakes...))
}

func TestGRPC_InfoAndSchema(t *testing.T) {
	dp := serveGRPC(t, newPlugin())
	info, err := dp.PluginInfo()
	must.NoError(t, err)
	must.Eq(t, base.PluginTypeDevice, info.Type)
	must.Eq(t, "nomad-device-accel", info.Name)
	must.NoError(t, configure(t, dp, map[string]any{}), must.Sprint("an empty config block takes the defaults"))
}

func TestGRPC_ConfigValidation(t *testing.T) {
	tests := map[string]struct {
		cfg  map[string]any
		want string
	}{
		"bad grouping":         {map[string]any{"topology_grouping": "rack"}, "topology_grouping"},
		"bad period":           {map[string]any{"fingerprint_period": "soon"}, "fingerprint_period"},
		"inventory no file":    {map[string]any{"backends": []any{"inventory"}}, "inventory_file"},
		"unknown backend":      {map[string]any{"backends": []any{"rocm"}}, `unknown backend "rocm"`},
		"two problems at once": {map[string]any{"topology_grouping": "x", "fingerprint_period": "-1s"}, "fingerprint_period"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dp := serveGRPC(t, newPlugin())
			err := configure(t, dp, tc.cfg)
			must.ErrorContains(t, err, tc.want)
		})
	}
}

func TestGRPC_FingerprintInventoryGroups(t *testing.T) {
	path := writeFile(t, a100Pairs)
	tests := map[string]struct {
		grouping string
		want     map[string]int // group name → devices
	}{
		"none":   {"none", map[string]int{"A100": 4, "Ascend910B": 2}},
		"island": {"island", map[string]int{"A100-island0": 2, "A100-island1": 2, "Ascend910B-island0": 2}},
		"numa":   {"numa", map[string]int{"A100-numa0": 2, "A100-numa1": 2, "Ascend910B-numa0": 2}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dp := serveGRPC(t, newPlugin())
			must.NoError(t, configure(t, dp, map[string]any{"inventory_file": path, "topology_grouping": tc.grouping}))
			groups := startFingerprint(t, dp).next().Devices
			got := map[string]int{}
			for _, g := range groups {
				got[g.Name] = len(g.Devices)
			}
			must.Eq(t, tc.want, got)
		})
	}
	t.Run("attributes", func(t *testing.T) {
		dp := serveGRPC(t, newPlugin())
		must.NoError(t, configure(t, dp, map[string]any{"inventory_file": path, "topology_grouping": "island"}))
		g := group(startFingerprint(t, dp).next().Devices, "A100-island1")
		must.NotNil(t, g)
		must.Eq(t, "nvidia", g.Vendor)
		must.Eq(t, "gpu", g.Type)
		attr := func(k string) string { return g.Attributes[k].GoString() }
		must.Eq(t, "A100", attr("model"))
		must.Eq(t, "40960MiB", attr("memory"))
		must.Eq(t, "8.0", attr("compute_capability"))
		must.Eq(t, "550.54.15", attr("driver_version"))
		must.Eq(t, "nvlink", attr("topology"))
		must.Eq(t, "12", attr("nvlink_links"))
		must.Eq(t, "1", attr("numa_node"))
		must.Eq(t, "1", attr("island"))
		must.Eq(t, "false", attr("mig"))
		must.NotNil(t, g.Devices[0].HwLocality)
	})
}

func TestGRPC_Reserve(t *testing.T) {
	dp := serveGRPC(t, newPlugin())
	must.NoError(t, configure(t, dp, map[string]any{"inventory_file": writeFile(t, a100Pairs)}))
	groups := startFingerprint(t, dp).next().Devices
	gpus, npus := group(groups, "A100"), group(groups, "Ascend910B")

	t.Run("gpus", func(t *testing.T) {
		ids := []string{gpus.Devices[0].ID, gpus.Devices[2].ID}
		res, err := dp.Reserve(ids)
		must.NoError(t, err)
		must.Eq(t, strings.Join(ids, ","), res.Envs["NVIDIA_VISIBLE_DEVICES"])
		must.Eq(t, strings.Join(ids, ","), res.Envs["CUDA_VISIBLE_DEVICES"])
		paths := hostPaths(res)
		must.Eq(t, []string{"/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidia2", "/dev/nvidiactl"}, paths)
	})
	t.Run("npus", func(t *testing.T) {
		res, err := dp.Reserve([]string{npus.Devices[1].ID})
		must.NoError(t, err)
		must.Eq(t, map[string]string{"ASCEND_VISIBLE_DEVICES": "1"}, res.Envs)
		must.Eq(t, []string{"/dev/davinci1", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}, hostPaths(res))
	})
	t.Run("unknown id", func(t *testing.T) {
		_, err := dp.Reserve([]string{gpus.Devices[0].ID, "GPU-nope"})
		must.ErrorContains(t, err, "unknown device ids: GPU-nope")
	})
}

func hostPaths(res *device.ContainerReservation) []string {
	var out []string
	for _, d := range res.Devices {
		out = append(out, d.HostPath)
	}
	return out
}

func TestReserveUnknownIsTyped(t *testing.T) {
	p := newPlugin()
	dp := serveGRPC(t, p)
	must.NoError(t, configure(t, dp, map[string]any{"inventory_file": writeFile(t, a100Pairs)}))
	_, err := p.Reserve([]string{"GPU-nope", "9"})
	var unknown *accel.UnknownDeviceError
	must.True(t, errors.As(err, &unknown))
	must.Eq(t, []string{"GPU-nope", "9"}, unknown.IDs)
}

func TestGRPC_BadInventoryKeepsServingAndRecovers(t *testing.T) {
	path := writeFile(t, a100Pairs)
	p := newPlugin()
	dp := serveGRPC(t, p)
	must.NoError(t, configure(t, dp, map[string]any{"inventory_file": path, "fingerprint_period": "20ms"}))
	s := startFingerprint(t, dp)
	first := s.next()
	must.NoError(t, first.Error)

	must.NoError(t, os.WriteFile(path, []byte(a100Pairs+"\ngpu \"H200\" {\n  count = eight\n}\n"), 0o644))
	broken := s.until(func(gs []*device.DeviceGroup) bool { return len(gs) > 0 && !gs[0].Devices[0].Healthy })
	for _, g := range broken {
		for _, d := range g.Devices {
			must.False(t, d.Healthy)
			must.StrContains(t, d.HealthDesc, path+":18,11")
		}
	}
	must.MapContainsKey(t, p.LastErrors(), "inventory")

	must.NoError(t, os.WriteFile(path, []byte(a100Pairs), 0o644))
	fixed := s.until(func(gs []*device.DeviceGroup) bool { return len(gs) > 0 && gs[0].Devices[0].Healthy })
	must.Eq(t, len(first.Devices), len(fixed))
	must.MapEmpty(t, p.LastErrors())
}

func TestGRPC_BrokenFromTheStartServesNothingThenRecovers(t *testing.T) {
	path := writeFile(t, "gpu {")
	dp := serveGRPC(t, newPlugin())
	must.NoError(t, configure(t, dp, map[string]any{"inventory_file": path, "fingerprint_period": "20ms"}))
	s := startFingerprint(t, dp)
	must.SliceEmpty(t, s.next().Devices)
	must.NoError(t, os.WriteFile(path, []byte(a100Pairs), 0o644))
	s.until(func(gs []*device.DeviceGroup) bool { return len(gs) == 2 })
}

func TestGRPC_HealthFlipWithinOnePeriod(t *testing.T) {
	path := writeFile(t, a100Pairs)
	dp := serveGRPC(t, newPlugin())
	must.NoError(t, configure(t, dp, map[string]any{"inventory_file": path, "fingerprint_period": "20ms"}))
	s := startFingerprint(t, dp)
	s.next()
	must.NoError(t, os.WriteFile(path, []byte(a100Pairs+"\nunhealthy = [\"A100[2]: XID 79\"]\n"), 0o644))
	gs := s.until(func(gs []*device.DeviceGroup) bool {
		for _, d := range group(gs, "A100").Devices {
			if !d.Healthy {
				return true
			}
		}
		return false
	})
	var bad []string
	for _, d := range group(gs, "A100").Devices {
		if !d.Healthy {
			bad = append(bad, d.HealthDesc)
		}
	}
	must.Eq(t, []string{"XID 79"}, bad)
}

func TestGRPC_IgnoredDevicesAndFakeBackend(t *testing.T) {
	fake := &fakeBackend{name: "nvml", FingerprintFn: func() ([]accel.Device, error) {
		return []accel.Device{
			{ID: "GPU-a", Vendor: "nvidia", Type: "gpu", Model: "H100", Healthy: true, Island: 0, NUMANode: 0},
			{ID: "GPU-b", Vendor: "nvidia", Type: "gpu", Model: "H100", Healthy: true, Island: 0, NUMANode: 0},
		}, nil
	}}
	dp := serveGRPC(t, newPlugin(fake))
	must.NoError(t, configure(t, dp, map[string]any{"backends": []any{"nvml"}, "ignored_devices": []any{"GPU-b"}}))
	g := group(startFingerprint(t, dp).next().Devices, "H100")
	must.Len(t, 1, g.Devices)
	must.Eq(t, "GPU-a", g.Devices[0].ID)
	_, err := dp.Reserve([]string{"GPU-b"})
	must.ErrorContains(t, err, "unknown device ids: GPU-b")
}

func TestGRPC_VanishedDeviceIsRemoved(t *testing.T) {
	two := []accel.Device{
		{ID: "GPU-a", Vendor: "nvidia", Type: "gpu", Model: "H100", Healthy: true},
		{ID: "GPU-b", Vendor: "nvidia", Type: "gpu", Model: "H100", Healthy: true},
	}
	fake := &fakeBackend{name: "nvml", FingerprintFn: func() ([]accel.Device, error) { return two, nil }}
	dp := serveGRPC(t, newPlugin(fake))
	must.NoError(t, configure(t, dp, map[string]any{"backends": []any{"nvml"}, "fingerprint_period": "20ms"}))
	s := startFingerprint(t, dp)
	must.Len(t, 2, s.next().Devices[0].Devices)
	fake.set(func() ([]accel.Device, error) { return two[:1], nil })
	s.until(func(gs []*device.DeviceGroup) bool { return len(gs[0].Devices) == 1 })
	_, err := dp.Reserve([]string{"GPU-b"})
	must.ErrorContains(t, err, "GPU-b")
}

func TestGRPC_Stats(t *testing.T) {
	dp := serveGRPC(t, newPlugin())
	must.NoError(t, configure(t, dp, map[string]any{"inventory_file": writeFile(t, a100Pairs), "topology_grouping": "island"}))
	startFingerprint(t, dp).next()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := dp.Stats(ctx, 50*time.Millisecond)
	must.NoError(t, err)
	var resp *device.StatsResponse
	select {
	case resp = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no stats")
	}
	must.NoError(t, resp.Error)
	must.Len(t, 3, resp.Groups)
	total := 0
	for _, g := range resp.Groups {
		for _, s := range g.InstanceStats {
			total++
			must.NotNil(t, s.Summary.IntNumeratorVal)
			for _, k := range []string{accel.StatUtilization, accel.StatMemoryUsed, accel.StatPower, accel.StatTemperature, accel.StatECCErrors} {
				must.MapContainsKey(t, s.Stats.Attributes, k)
			}
		}
	}
	must.Eq(t, 6, total)
}

func TestGRPC_UnparsableNPUSmiKeepsServingAndRecovers(t *testing.T) {
	good, err := os.ReadFile("../ascend/testdata/910b.txt")
	must.NoError(t, err)
	garbage, err := os.ReadFile("../ascend/testdata/garbage.txt")
	must.NoError(t, err)
	var mu sync.Mutex
	out := good
	run := func(context.Context, string, ...string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		return out, nil
	}
	set := func(b []byte) { mu.Lock(); out = b; mu.Unlock() }
	fs := factories()
	fs["ascend"] = func(*accel.Config) (accel.Backend, error) {
		return ascend.New("npu-smi", run, hclog.NewNullLogger()), nil
	}
	dp := serveGRPC(t, accel.New(hclog.NewNullLogger(), fs))
	must.NoError(t, configure(t, dp, map[string]any{"backends": []any{"ascend"}, "fingerprint_period": "20ms"}))
	s := startFingerprint(t, dp)
	must.Len(t, 8, group(s.next().Devices, "Ascend910B").Devices)

	set(garbage)
	gs := s.until(func(gs []*device.DeviceGroup) bool { return len(gs) > 0 && !gs[0].Devices[0].Healthy })
	must.StrContains(t, gs[0].Devices[0].HealthDesc, "npu-smi info: unrecognised output")
	must.Len(t, 8, gs[0].Devices, must.Sprint("the last known NPUs stay listed"))

	set(good)
	s.until(func(gs []*device.DeviceGroup) bool { return len(gs) > 0 && gs[0].Devices[0].Healthy })
}

func TestGRPC_ExplicitBackendThatCannotStartIsReported(t *testing.T) {
	p := accel.New(hclog.NewNullLogger(), map[string]accel.Factory{
		"nvml": func(*accel.Config) (accel.Backend, error) {
			return nil, fmt.Errorf("nvml init: libnvidia-ml.so not found: %w", accel.ErrNotDetected)
		},
	})
	dp := serveGRPC(t, p)
	must.NoError(t, configure(t, dp, map[string]any{"backends": []any{"nvml", "ascend"}}))
	must.SliceEmpty(t, startFingerprint(t, dp).next().Devices)
	errs := p.LastErrors()
	must.StrContains(t, errs["nvml"], "libnvidia-ml.so not found")
	must.StrContains(t, errs["ascend"], "not built into this binary")
}

func TestGRPC_DetectSkipsMissingHardwareQuietly(t *testing.T) {
	p := accel.New(hclog.NewNullLogger(), map[string]accel.Factory{
		"nvml":   func(*accel.Config) (accel.Backend, error) { return nil, accel.ErrNotDetected },
		"ascend": func(*accel.Config) (accel.Backend, error) { return nil, accel.ErrNotDetected },
	})
	dp := serveGRPC(t, p)
	must.NoError(t, configure(t, dp, map[string]any{}))
	must.SliceEmpty(t, startFingerprint(t, dp).next().Devices)
	must.MapEmpty(t, p.LastErrors())
}
