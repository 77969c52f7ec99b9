//go:build linux && cgo

package nvml

import (
	"context"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// procs builds a process list function returning the given pids, or ret
// with no list when ret is not SUCCESS.
func procs(ret nvml.Return, pids ...uint32) func() ([]nvml.ProcessInfo, nvml.Return) {
	return func() ([]nvml.ProcessInfo, nvml.Return) {
		if ret != nvml.SUCCESS {
			return nil, ret
		}
		var out []nvml.ProcessInfo
		for _, p := range pids {
			out = append(out, nvml.ProcessInfo{Pid: p, UsedGpuMemory: 1 << 30})
		}
		return out, nvml.SUCCESS
	}
}

func TestStatsProcesses(t *testing.T) {
	ok := nvml.SUCCESS
	tests := map[string]struct {
		compute, graphics func() ([]nvml.ProcessInfo, nvml.Return)
		want              *int64 // nil: unknown
	}{
		"none":                   {compute: procs(ok), graphics: procs(ok), want: ptr(0)},
		"compute only":           {compute: procs(ok, 100, 101), graphics: procs(ok), want: ptr(2)},
		"graphics only":          {compute: procs(ok), graphics: procs(ok, 7), want: ptr(1)},
		"both, one shared pid":   {compute: procs(ok, 100, 101), graphics: procs(ok, 101, 200), want: ptr(3)},
		"compute not supported":  {compute: procs(nvml.ERROR_NOT_SUPPORTED), graphics: procs(ok), want: nil},
		"graphics not supported": {compute: procs(ok), graphics: procs(nvml.ERROR_NOT_SUPPORTED), want: nil},
		"no permission":          {compute: procs(nvml.ERROR_NO_PERMISSION), graphics: procs(nvml.ERROR_NO_PERMISSION), want: nil},
		"gpu lost":               {compute: procs(nvml.ERROR_GPU_IS_LOST), graphics: procs(nvml.ERROR_GPU_IS_LOST), want: nil},
		"graphics fails, compute busy: a lower bound": {
			compute: procs(ok, 100), graphics: procs(nvml.ERROR_NOT_SUPPORTED), want: ptr(1)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			box := h200Box()
			box.gpus[2].GetComputeRunningProcessesFunc = tc.compute
			box.gpus[2].GetGraphicsRunningProcessesFunc = tc.graphics
			be := open(t, box)
			devs := fingerprint(t, be)
			stats, err := be.Stats(context.Background(), devs)
			must.NoError(t, err)
			must.MapLen(t, 8, stats)
			if tc.want == nil {
				must.Nil(t, stats[devs[2].ID].Processes)
			} else {
				must.NotNil(t, stats[devs[2].ID].Processes)
				must.Eq(t, *tc.want, *stats[devs[2].ID].Processes)
			}
			// The other GPUs are untouched: known and empty.
			must.NotNil(t, stats[devs[3].ID].Processes)
			must.Eq(t, int64(0), *stats[devs[3].ID].Processes)
		})
	}
}

// TestProcessesReachTheDeviceStats runs the backend inside the plugin: the
// count is the Processes statistic governor/idle reads, and an unknown count
// is no statistic at all (not zero).
func TestProcessesReachTheDeviceStats(t *testing.T) {
	box := a100PairsBox()
	box.gpus[1].GetComputeRunningProcessesFunc = procs(nvml.SUCCESS, 4242, 4243)
	box.gpus[3].GetComputeRunningProcessesFunc = procs(nvml.ERROR_NOT_SUPPORTED)
	p := accel.New(hclog.NewNullLogger(), map[string]accel.Factory{
		BackendName: func(*accel.Config) (accel.Backend, error) {
			return New(box.srv, accel.DefaultBenignXIDs, hclog.NewNullLogger())
		},
	})
	t.Cleanup(p.Close)
	cfg := accel.DefaultConfig()
	cfg.Backends = []string{BackendName}
	must.NoError(t, p.SetConfigDirect(cfg))
	devs := p.Devices(context.Background())
	must.Len(t, 4, devs)
	res := p.CollectStats(context.Background())
	must.NoError(t, res.Error)
	must.Len(t, 1, res.Groups)
	inst := res.Groups[0].InstanceStats
	count := func(i int) *int64 {
		st := inst[box.gpus[i].UUID]
		must.NotNil(t, st, must.Sprintf("no stats for gpu %d", i))
		v := st.Stats.Attributes[accel.StatProcesses]
		if v == nil {
			return nil
		}
		return v.IntNumeratorVal
	}
	must.Eq(t, int64(0), *count(0))
	must.Eq(t, int64(2), *count(1))
	must.Nil(t, count(3), must.Sprint("an unsupported process list is no statistic, not zero"))
}

func ptr(n int64) *int64 { return &n }
