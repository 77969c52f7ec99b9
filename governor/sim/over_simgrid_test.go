//go:build simgrid

package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/allot-sh/allot/governor/engine"
)

// TestShareErrorBeyond splits the GPU-time tenants hold beyond their
// entitlement (per 10-minute sample, as Summarize scores it) over the
// running jobs that hold it, in proportion to their GPUs: by what a stop
// would throw away now and by whether the job ever checkpoints. Per tenant it also counts the part its largest running job
// alone explains (that job is larger than the entitlement) and the part
// beyond both (the tenant's other jobs). Rows and settings as
// TestShareErrorByCheck's (docs/simulator.md, round 50):
//
//	SIMGRID_ROWS=1.2:2 go test -tags simgrid -run '^TestShareErrorBeyond$' -v -timeout 30m ./governor/sim/
func TestShareErrorBeyond(t *testing.T) {
	for _, row := range simgridRows(t) {
		s := row.sim(t)
		m := newLackMeter(s)
		by := map[string]float64{}
		m.also = func(smp Sample, fair []float64) { beyond(s, fair, smp, by) }
		s.onSettle = m.settle
		s.loop()
		sum := Summarize(s.result())
		fmt.Printf("\n%s load %.1f seed %d: share error %.4f\n", row.cluster, row.load, row.seed, sum.ShareError)
		m.print()
		split := 0.0
		keys := make([]string, 0, len(by))
		for k, v := range by {
			keys = append(keys, k)
			if strings.HasPrefix(k, "stop: ") {
				split += v
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Printf("  beyond, %-36s %.4f\n", k, by[k]/m.entSum)
		}
		// The split by stop cost covers every GPU-second held beyond.
		if d := math.Abs(split - m.total(m.over)); d > 1e-6*m.entSum {
			t.Fatalf("split by stop cost %.1f, held beyond %.1f", split, m.total(m.over))
		}
	}
}

// beyond adds sample smp's GPU-time held beyond the entitlements fair
// to by.
func beyond(s *sim, fair []float64, smp Sample, by map[string]float64) {
	run := make([][]*jobRun, len(fair))
	for _, j := range s.jobs[s.firstOpen:s.submitted] {
		if j.running && !j.done {
			i := s.m.tIdx[j.w.Tenant]
			run[i] = append(run[i], j)
		}
	}
	for i := range fair {
		d := float64(smp.Tenant[i]) - fair[i]
		if d <= 0 {
			continue
		}
		if len(run[i]) == 0 { // placed, not yet running
			by["stop: (no job running)"] += d
			continue
		}
		tot, big := 0, 0
		for _, j := range run[i] {
			tot += j.w.GPUs()
			if j.w.GPUs() > big {
				big = j.w.GPUs()
			}
		}
		tn := s.m.tenants[i]
		by[tn+": largest job alone"] += math.Min(d, math.Max(0, float64(big)-fair[i]))
		by[tn+": beyond its largest job"] += math.Max(0, float64(smp.Tenant[i])-math.Max(fair[i], float64(big)))
		for _, j := range run[i] {
			w := d * float64(j.w.GPUs()) / float64(tot)
			by["stop: "+stopCost(s.stopLoss(j))] += w
			by[fmt.Sprintf("never checkpoints: %v", j.w.Checkpoint == 0 && !j.w.SavesOnStop)] += w
		}
	}
}

// stopCost buckets the work a stop would throw away by the engine's
// bounds on it: engine.FairCheapLoss (a cheap stop) and
// engine.FairLostWork (what fairness and moves may take).
func stopCost(lost time.Duration) string {
	cheap, fair := engine.FairCheapLoss, engine.FairLostWork
	switch {
	case lost <= cheap:
		return fmt.Sprintf("throws away ≤ %v", cheap)
	case lost <= fair:
		return fmt.Sprintf("throws away %v-%v", cheap, fair)
	}
	return fmt.Sprintf("throws away > %v", fair)
}
