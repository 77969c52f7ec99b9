package idle

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// benchNomad is a fake Nomad of n running one-GPU allocations, half idle.
func benchNomad(n int) *fakeNomad {
	f := &fakeNomad{util: map[string]float64{}, mem: map[string]int64{}, procs: map[string]int64{},
		meta: map[string]map[string]string{"ml": {KeyWindow: "10m"}}, byID: map[string]*api.AllocationListStub{}}
	for i := 0; i < n; i++ {
		dev := fmt.Sprintf("GPU-%d", i)
		f.allocs = append(f.allocs, allocStub(fmt.Sprintf("a-%d", i), fmt.Sprintf("j-%d", i), api.AllocClientStatusRunning, dev))
		f.byID[f.allocs[i].ID] = f.allocs[i]
		f.util[dev], f.mem[dev] = float64(80*(i%2)), 20000
	}
	return f
}

// BenchmarkServicePeriod1000 is one detection period over 1,000 watched
// allocations: listing, per-allocation stats decoding, the ladder, zombie
// check over the node's devices and metrics (Nomad's HTTP round trips are
// faked, so this is the governor's own CPU per period).
func BenchmarkServicePeriod1000(b *testing.B) {
	b.ReportMetric(benchServicePeriod(b, 1000)/60*100, "cpu%/1000allocs@1m")
}

// BenchmarkServicePeriod10000 is the same over 10,000 allocations (one
// node with 10,000 devices), to see whether a period grows faster than
// the allocations.
func BenchmarkServicePeriod10000(b *testing.B) {
	b.ReportMetric(benchServicePeriod(b, 10000)/60*100, "cpu%@1m")
}

// benchServicePeriod runs b.N periods over n allocations and returns the
// seconds per period.
func benchServicePeriod(b *testing.B, n int) float64 {
	f := benchNomad(n)
	now := t0
	s := NewService(Options{Source: f, Namespaces: f, Defaults: DefaultPolicy(), Period: time.Minute, Metrics: NewMetrics(nil),
		ZombieMemoryMiB: 256, Now: func() time.Time { return now }})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(time.Minute)
		if err := s.Once(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	return b.Elapsed().Seconds() / float64(b.N)
}

// BenchmarkTick1000 is the ladder alone over 1,000 allocations.
func BenchmarkTick1000(b *testing.B) {
	d := NewDetector()
	obs := make([]Observation, 1000)
	for i := range obs {
		obs[i].Watch = Watch{AllocID: fmt.Sprint(i), Namespace: "ml", JobID: fmt.Sprint(i), Devices: 1}
	}
	ten := func(string) Tenant { return Tenant{Policy: DefaultPolicy()} }
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		for k := range obs {
			obs[k].Sample = Sample{At: at, Known: true, UtilPct: float64(80 * (k % 2)), MemoryMiB: 20000}
		}
		d.Tick(obs, ten)
	}
}

// BenchmarkDetectionLatency measures, with a fake clock, the time from
// the moment an allocation goes idle (uniformly placed between two
// periods) to its warning, in units of the period beyond the designed
// warning point (window + grace − notice).
func BenchmarkDetectionLatency(b *testing.B) {
	p := testPolicy()
	r := rand.New(rand.NewSource(1))
	var total time.Duration
	for i := 0; i < b.N; i++ {
		tr := &tracker{c: Candidate{Watch: Watch{Devices: 1}, Step: StepObserve}}
		idleAt := t0.Add(time.Duration(r.Int63n(int64(period))))
		for n := 1; ; n++ {
			at := t0.Add(time.Duration(n) * period)
			if tr.observe(Sample{At: at, Known: true, UtilPct: 0, MemoryMiB: 20000}, p, nil) == Warn {
				total += at.Sub(idleAt)
				break
			}
		}
	}
	mean := total / time.Duration(b.N)
	b.ReportMetric((mean-(p.Window+p.Grace-p.Notice)).Seconds()/period.Seconds(), "periods-beyond-warn-point")
}
