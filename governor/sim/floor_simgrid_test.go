//go:build simgrid

package sim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestShareErrorFloor sets allot's share error beside lower bounds
// computed, per 10-minute sample, from the jobs that sample holds (the
// same samples and fair division Summarize scores):
//
//   - whole jobs: the least Σ |x − entitled| over allocations that give
//     each tenant whole jobs of its submitted, unfinished ones (at most its
//     hard limit), within the cluster's GPUs. What the jobs' sizes alone
//     force, whatever was running before.
//   - without preemption: the same, but each tenant keeps every job it has
//     admitted and may only add held ones. What admission alone could have
//     reached at that sample, given what runs.
//   - preempting what loses at most L (floorLosses: 0, 5 and 30 minutes):
//     the same, but a running job whose stop would throw away at most L of
//     work (as the simulator counts it: the work since its last periodic
//     checkpoint, none for a job that saves on stop) may be dropped too;
//     "as busy" also allocates no fewer GPUs than allot had at the sample
//     (the bound may not buy fairness with idle GPUs); "keeping the
//     nominal" is as busy and also leaves every tenant at least the
//     lesser of its nominal quota and what it ran (no preemption takes a
//     tenant below its nominal, the quota's promise).
//
// All ignore placement (GPUs are counted, not packed onto nodes) and
// judge each sample alone, so they are bounds, not a schedule: a schedule
// that preempted at every sample would throw away the work of every
// sample. The kept floors keep a job admitted but not yet placed whole,
// where the sample counts only the GPUs placed, so allot's own sample may
// score below them. Rows and settings as TestShareErrorByCheck's
// (docs/simulator.md, rounds 42 to 44):
//
//	SIMGRID_ROWS=1.2:2,1.5:3 go test -tags simgrid -run '^TestShareErrorFloor$' -v -timeout 30m ./governor/sim/
func TestShareErrorFloor(t *testing.T) {
	for _, row := range simgridRows(t) {
		s := row.sim(t)
		m := newFloorMeter(s)
		s.onSettle = m.settle
		s.loop()
		sum := Summarize(s.result())
		must.Positive(t, m.ent)
		fmt.Printf("%s load %.1f seed %d: share error %.4f (report %.4f), whole-job floor %.4f, without preemption %.4f",
			row.cluster, row.load, row.seed, m.err/m.ent, sum.ShareError, m.whole/m.ent, m.kept/m.ent)
		for k, most := range floorLosses {
			fmt.Printf(", preempting what loses ≤ %v %.4f (as busy %.4f, keeping the nominal %.4f)", most, m.cheap[k]/m.ent, m.busy[k]/m.ent, m.nominal[k]/m.ent)
		}
		fmt.Println()
		must.InDelta(t, sum.ShareError, m.err/m.ent, 1e-3)
		must.LessEq(t, m.kept+1e-6, m.whole, must.Sprint("keeping running jobs cannot lower the floor"))
		for k := range floorLosses {
			must.LessEq(t, m.cheap[k]+1e-6, m.whole, must.Sprint("dropping only some running jobs cannot lower the floor"))
			must.LessEq(t, m.busy[k]+1e-6, m.cheap[k], must.Sprint("allocating no fewer GPUs cannot lower the floor"))
			must.LessEq(t, m.kept+1e-6, m.busy[k], must.Sprint("dropping what loses little cannot raise the floor"))
			must.LessEq(t, m.nominal[k]+1e-6, m.busy[k], must.Sprint("keeping every tenant's nominal cannot lower the floor"))
			must.LessEq(t, m.kept+1e-6, m.nominal[k], must.Sprint("keeping the nominal, dropping what loses little cannot raise the floor"))
			if k > 0 {
				must.LessEq(t, m.cheap[k-1]+1e-6, m.cheap[k], must.Sprint("a larger loss bound cannot raise the floor"))
			}
		}
	}
}

// TestFloorOf checks the bound on hand-made samples.
func TestFloorOf(t *testing.T) {
	cases := []struct {
		name  string
		gpus  int
		fair  []float64
		sizes [][]int
		kept  []int
		limit []int
		want  float64
	}{
		{"divisible", 16, []float64{8, 8}, [][]int{{4, 4, 4}, {8, 8}}, []int{0, 0}, []int{0, 0}, 0},
		{"a gang larger than the share", 16, []float64{8, 8}, [][]int{{16}, {8, 8}}, []int{0, 0}, []int{0, 0}, 8},
		{"the cluster bounds the overshoot", 16, []float64{6, 10}, [][]int{{8}, {8, 2}}, []int{0, 0}, []int{0, 0}, 4},
		{"what runs is kept", 16, []float64{8, 8}, [][]int{{4}, {}}, []int{12, 0}, []int{0, 0}, 12},
		{"a limit binds", 16, []float64{8, 8}, [][]int{{8, 8}, {8}}, []int{0, 0}, []int{4, 0}, 8},
	}
	// At least 8 GPUs in all: the first tenant entitled to 2 must take
	// its 8-GPU job rather than leave the GPUs idle (8 instead of 4).
	must.InDelta(t, 4, floorOf(16, []float64{2, 2}, [][]int{{8}, {}}, []int{0, 0}, []int{0, 0}), 1e-9)
	must.InDelta(t, 8, floorAtLeast(16, []float64{2, 2}, [][]int{{8}, {}}, []int{0, 0}, []int{0, 0}, nil, 8), 1e-9)
	// The first tenant ran a 12-GPU job that may be dropped; the second
	// waits with an 8-GPU one, both entitled to 8. Dropping the 12 for
	// the 8 reaches 8; kept at its nominal (8) the first keeps the 12,
	// and the second's 8 no longer fits: 4 + 8.
	must.InDelta(t, 8, floorAtLeast(16, []float64{8, 8}, [][]int{{12}, {8}}, []int{0, 0}, []int{0, 0}, nil, 0), 1e-9)
	must.InDelta(t, 12, floorAtLeast(16, []float64{8, 8}, [][]int{{12}, {8}}, []int{0, 0}, []int{0, 0}, []int{8, 0}, 0), 1e-9)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.InDelta(t, tc.want, floorOf(tc.gpus, tc.fair, tc.sizes, tc.kept, tc.limit), 1e-9)
		})
	}
}

// floorMeter sums, over the samples, allot's distance from the
// entitlement and the floors.
type floorMeter struct {
	lack                  *lackMeter
	seen                  int
	ent, err, whole, kept float64
	// cheap holds, per floorLosses, the floor when jobs that lose at
	// most that much may be dropped.
	cheap []float64
	// busy is cheap with no fewer GPUs allocated than allot had.
	busy []float64
	// nominal is busy with every tenant left at least the lesser of its
	// nominal quota and what it ran.
	nominal []float64
}

func newFloorMeter(s *sim) *floorMeter {
	return &floorMeter{lack: newLackMeter(s), cheap: make([]float64, len(floorLosses)), busy: make([]float64, len(floorLosses)),
		nominal: make([]float64, len(floorLosses))}
}

func (m *floorMeter) settle() {
	s := m.lack.s
	if len(s.m.samples) == m.seen {
		return
	}
	m.seen = len(s.m.samples)
	smp := s.m.samples[m.seen-1]
	if smp.T > Week {
		return
	}
	fair := m.lack.fair(smp)
	n := len(fair)
	all, held := make([][]int, n), make([][]int, n)
	running, none := make([]int, n), make([]int, n)
	cheapBy := make([][][]int, len(floorLosses))
	dearBy := make([][]int, len(floorLosses))
	for k := range floorLosses {
		cheapBy[k], dearBy[k] = make([][]int, n), make([]int, n)
	}
	for _, j := range s.jobs[:s.submitted] {
		if j.done || s.aboveLimit(j) {
			continue
		}
		i := s.m.tIdx[j.w.Tenant]
		g := j.w.GPUs()
		all[i] = append(all[i], g)
		if j.held {
			held[i] = append(held[i], g)
			for k := range floorLosses {
				cheapBy[k][i] = append(cheapBy[k][i], g)
			}
			continue
		}
		running[i] += g
		loss := s.stopLoss(j)
		for k, most := range floorLosses {
			if loss <= most {
				cheapBy[k][i] = append(cheapBy[k][i], g)
			} else {
				dearBy[k][i] += g
			}
		}
	}
	for i := range fair {
		m.ent += fair[i]
		m.err += math.Abs(fair[i] - float64(smp.Tenant[i]))
	}
	m.whole += floorOf(s.m.gpus, fair, all, none, m.lack.limits)
	m.kept += floorOf(s.m.gpus, fair, held, running, m.lack.limits)
	keep := make([]int, n)
	for i := range keep {
		keep[i] = running[i]
		if q := m.lack.weights[i]; q < keep[i] {
			keep[i] = q
		}
	}
	for k := range floorLosses {
		m.cheap[k] += floorOf(s.m.gpus, fair, cheapBy[k], dearBy[k], m.lack.limits)
		m.busy[k] += floorAtLeast(s.m.gpus, fair, cheapBy[k], dearBy[k], m.lack.limits, nil, smp.Allocated)
		m.nominal[k] += floorAtLeast(s.m.gpus, fair, cheapBy[k], dearBy[k], m.lack.limits, keep, smp.Allocated)
	}
}

// floorLosses are the most work a stop may throw away for the floors
// that may preempt: a running job that would lose at most that much may
// be dropped (as the fair-share rule's cheap victims, FairCheapLoss, and
// a move's fresh checkpoint), the others are kept.
var floorLosses = []time.Duration{0, 5 * time.Minute, 30 * time.Minute}

// stopLoss is the work a stop of job j would throw away now, as
// interrupt counts it (none while not every allocation runs).
func (s *sim) stopLoss(j *jobRun) time.Duration {
	if !j.running {
		return 0
	}
	return s.unsaved(j, j.progress+s.now-j.runningSince)
}

// floorOf is the least Σ |x_i − fair_i| over allocations x_i = kept_i +
// the GPUs of a subset of sizes_i, x_i no more than limits_i (0: none),
// Σ x_i ≤ gpus: a knapsack over the tenants by GPUs used.
func floorOf(gpus int, fair []float64, sizes [][]int, kept, limits []int) float64 {
	return floorAtLeast(gpus, fair, sizes, kept, limits, nil, 0)
}

// floorAtLeast is floorOf over the allocations that use at least least
// GPUs in all (no more idle than a schedule that used least) and give
// every tenant i at least lows_i (nil: no such bound).
func floorAtLeast(gpus int, fair []float64, sizes [][]int, kept, limits, lows []int, least int) float64 {
	inf := math.Inf(1)
	best := make([]float64, gpus+1)
	for c := 1; c <= gpus; c++ {
		best[c] = inf
	}
	next := make([]float64, gpus+1)
	for i := range fair {
		top := gpus
		if limits[i] > 0 && limits[i] < top {
			top = limits[i]
		}
		for c := range next {
			next[c] = inf
		}
		for add, ok := range subsetSums(sizes[i], gpus) {
			x := kept[i] + add
			if !ok || x > gpus || (x > top && add > 0) || (lows != nil && x < lows[i]) {
				continue
			}
			cost := math.Abs(float64(x) - fair[i])
			for c := x; c <= gpus; c++ {
				if v := best[c-x] + cost; v < next[c] {
					next[c] = v
				}
			}
		}
		best, next = next, best
	}
	low := inf
	for c, v := range best {
		if c >= least {
			low = math.Min(low, v)
		}
	}
	return low
}

// subsetSums marks every sum of a subset of sizes up to most.
func subsetSums(sizes []int, most int) []bool {
	out := make([]bool, most+1)
	out[0] = true
	for _, g := range sizes {
		for c := most; c >= g; c-- {
			out[c] = out[c] || out[c-g]
		}
	}
	return out
}
