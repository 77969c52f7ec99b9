//go:build linux && cgo

package nvml

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/device-plugin/accel"
)

func open(t *testing.T, b *box) *Backend {
	t.Helper()
	be, err := New(b.srv, accel.DefaultBenignXIDs, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = be.Close() })
	return be
}

func fingerprint(t *testing.T, be *Backend) []accel.Device {
	t.Helper()
	devs, err := be.Fingerprint(context.Background())
	must.NoError(t, err)
	return devs
}

func TestH200NVSwitchBox(t *testing.T) {
	box := h200Box()
	devs := fingerprint(t, open(t, box))
	must.Len(t, 8, devs)
	for i, d := range devs {
		must.Eq(t, box.gpus[i].UUID, d.ID)
		must.Eq(t, "H200", d.Model)
		must.Eq(t, "nvidia", d.Vendor)
		must.Eq(t, int64(144384), d.MemoryMiB)
		must.Eq(t, "9.0", d.ComputeCapability)
		must.Eq(t, "550.54.15", d.DriverVersion)
		must.Eq(t, "12.4", d.CUDAVersion)
		must.Eq(t, box.bus(i), d.PCIBusID)
		must.Eq(t, i/4, d.NUMANode)
		must.Eq(t, accel.TopologyNVSwitch, d.Topology)
		must.Eq(t, 18, d.NVLinkLinks)
		must.Eq(t, 0, d.Island)
		must.Eq(t, 700, d.PowerLimitW)
		must.Eq(t, i, d.Index)
		must.True(t, d.Healthy)
	}
	groups := accel.BuildGroups(devs, accel.GroupingNone)
	must.Len(t, 1, groups)
	must.Eq(t, "nvswitch", groups[0].Attributes["topology"].GoString())
}

func TestA100PCIeBoxWithNVLinkPairs(t *testing.T) {
	devs := fingerprint(t, open(t, a100PairsBox()))
	must.Len(t, 4, devs)
	for i, d := range devs {
		must.Eq(t, "A100", d.Model)
		must.Eq(t, accel.TopologyNVLink, d.Topology)
		must.Eq(t, 4, d.NVLinkLinks)
		must.Eq(t, i/2, d.Island)
	}
	var names []string
	for _, g := range accel.BuildGroups(devs, accel.GroupingIsland) {
		names = append(names, g.Name)
		must.Len(t, 2, g.Devices)
	}
	must.Eq(t, []string{"A100-island0", "A100-island1"}, names)
}

func TestPCIeOnlyAndNUMAFromCommonAncestors(t *testing.T) {
	box := newBox(a100PairsBox().srv) // fresh helpers: no NVLink, no NUMA ids
	devs := fingerprint(t, open(t, box))
	for i, d := range devs {
		must.Eq(t, accel.TopologyPCIe, d.Topology)
		must.Eq(t, 0, d.NVLinkLinks)
		must.Eq(t, i, d.Island, must.Sprint("a PCIe-only GPU is its own island"))
	}
	// The helper's common-ancestor levels put GPUs 0-2 under one CPU and
	// GPU 3 under the other.
	must.Eq(t, []int{0, 0, 0, 1}, numaOf(devs))
}

func numaOf(devs []accel.Device) []int {
	var out []int
	for _, d := range devs {
		out = append(out, d.NUMANode)
	}
	return out
}

func TestMIGInstancesAreTheirOwnGroups(t *testing.T) {
	box := a100PairsBox()
	box.enableMIG(1, "3g.20gb", "3g.20gb")
	devs := fingerprint(t, open(t, box))
	must.Len(t, 6, devs)
	parent := devs[1]
	must.True(t, parent.MIGEnabled)
	var mig []accel.Device
	for _, d := range devs {
		if d.MIGParent != "" {
			mig = append(mig, d)
		}
	}
	must.Len(t, 2, mig)
	for _, m := range mig {
		must.Eq(t, parent.ID, m.MIGParent)
		must.Eq(t, "3g.20gb", m.MIGProfile)
		must.Eq(t, int64(20096), m.MemoryMiB)
		must.Eq(t, parent.Island, m.Island)
		must.StrHasPrefix(t, "MIG-", m.ID)
	}
	groups := accel.BuildGroups(devs, accel.GroupingNone)
	must.Len(t, 2, groups)
	must.Eq(t, "A100", groups[0].Name)
	must.Len(t, 3, groups[0].Devices)
	must.Eq(t, "A100-3g.20gb", groups[1].Name)
	must.Eq(t, "true", groups[1].Attributes["mig"].GoString())
	res := accel.Reservation(mig)
	must.Eq(t, mig[0].ID+","+mig[1].ID, res.Envs["NVIDIA_VISIBLE_DEVICES"])
}

func TestXIDStorm(t *testing.T) {
	box := h200Box()
	be := open(t, box)
	fingerprint(t, be) // registers events
	for i := 0; i < 500; i++ {
		box.xid(i%8, []uint64{13, 31, 43, 45, 68, 109}[i%6]) // benign: application errors
	}
	box.xid(2, 79) // fell off the bus
	box.xid(5, 48) // double-bit ECC
	box.xid(5, 48)
	devs := fingerprint(t, be)
	var bad []string
	for i, d := range devs {
		if !d.Healthy {
			bad = append(bad, d.HealthDesc)
			must.True(t, i == 2 || i == 5, must.Sprintf("gpu %d unhealthy: %s", i, d.HealthDesc))
		}
	}
	must.Eq(t, []string{"XID 79 critical error", "XID 48 critical error"}, bad)

	// Verdicts are sticky: a quiet period does not heal a GPU.
	devs = fingerprint(t, be)
	must.False(t, devs[2].Healthy)

	t.Run("custom benign list", func(t *testing.T) {
		box := h200Box()
		be, err := New(box.srv, []int{79}, hclog.NewNullLogger())
		must.NoError(t, err)
		fingerprint(t, be)
		box.xid(0, 79)
		box.xid(1, 13)
		devs := fingerprint(t, be)
		must.True(t, devs[0].Healthy)
		must.False(t, devs[1].Healthy)
	})
	t.Run("an event naming no device hits all", func(t *testing.T) {
		box := h200Box()
		be := open(t, box)
		box.xid(-1, 62)
		for _, d := range fingerprint(t, be) {
			must.False(t, d.Healthy)
		}
	})
}

func TestNVMLErrorsMakeAGPUUnhealthy(t *testing.T) {
	box := h200Box()
	box.gpus[5].GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }
	devs := fingerprint(t, open(t, box))
	must.False(t, devs[5].Healthy)
	must.Eq(t, "nvml GetMemoryInfo: GPU is lost (fell off the bus)", devs[5].HealthDesc)
	must.True(t, devs[4].Healthy)
}

func TestVanishedGPUIsRemoved(t *testing.T) {
	box := h200Box()
	be := open(t, box)
	must.Len(t, 8, fingerprint(t, be))
	box.xid(7, 79)
	must.False(t, fingerprint(t, be)[7].Healthy)
	box.vanish(1)
	devs := fingerprint(t, be)
	must.Len(t, 7, devs)
	for _, d := range devs {
		must.NotEq(t, box.gpus[7].UUID, d.ID)
	}
	must.MapNotContainsKey(t, be.xid, box.gpus[7].UUID)
}

func TestDeviceCountFailureIsAFingerprintError(t *testing.T) {
	box := h200Box()
	box.srv.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	_, err := open(t, box).Fingerprint(context.Background())
	var fe *accel.FingerprintError
	must.True(t, errors.As(err, &fe))
	must.StrContains(t, err.Error(), "nvmlDeviceGetCount")
}

func TestInitFailures(t *testing.T) {
	box := h200Box()
	box.srv.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	_, err := New(box.srv, nil, hclog.NewNullLogger())
	must.True(t, errors.Is(err, accel.ErrNotDetected))
	box.srv.InitFunc = func() nvml.Return { return nvml.ERROR_UNKNOWN }
	_, err = New(box.srv, nil, hclog.NewNullLogger())
	must.False(t, errors.Is(err, accel.ErrNotDetected))
}

func TestStats(t *testing.T) {
	box := h200Box()
	be := open(t, box)
	devs := fingerprint(t, be)
	stats, err := be.Stats(context.Background(), devs)
	must.NoError(t, err)
	must.MapLen(t, 8, stats)
	s := stats[devs[3].ID]
	must.Eq(t, 30.0, s.UtilizationPct)
	must.Eq(t, int64(144384/4), s.MemoryUsedMiB)
	must.Eq(t, int64(144384), s.MemoryTotalMiB)
	must.Eq(t, 103.0, s.PowerW)
	must.Eq(t, 43.0, s.TemperatureC)
}

func TestShortModel(t *testing.T) {
	tests := map[string]string{
		"NVIDIA H200 141GB HBM3e":          "H200",
		"NVIDIA A100-SXM4-40GB":            "A100",
		"Mock NVIDIA A100-SXM4-40GB":       "A100",
		"NVIDIA H100 80GB HBM3":            "H100",
		"Tesla V100-SXM2-32GB":             "V100",
		"NVIDIA GeForce RTX 4090":          "RTX-4090",
		"NVIDIA RTX A6000":                 "RTX-A6000",
		"NVIDIA L40S":                      "L40S",
		"  ":                               "unknown",
		"NVIDIA A100-SXM4-40GB MIG 1g.5gb": "A100",
	}
	for in, want := range tests {
		must.Eq(t, want, ShortModel(in), must.Sprint(in))
	}
	must.Eq(t, "1g.5gb", migProfile("NVIDIA A100-SXM4-40GB MIG 1g.5gb"))
	must.Eq(t, "", migProfile("NVIDIA A100"))
	must.True(t, strings.HasPrefix(busID(pciInfo("00000000:18:00.0")), "00000000:18"))
}
