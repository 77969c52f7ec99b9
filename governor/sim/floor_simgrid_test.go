//go:build simgrid

package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/shoenig/test/must"
)

// TestShareErrorFloor sets allot's share error beside two lower bounds
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
//
// Both ignore placement (GPUs are counted, not packed onto nodes) and
// judge each sample alone, so they are bounds, not a schedule. The second
// keeps a job admitted but not yet placed whole, where the sample counts
// only the GPUs placed, so allot's own sample may score below it. Rows and
// settings as TestShareErrorByCheck's (docs/simulator.md, round 42):
//
//	SIMGRID_ROWS=1.2:2,1.5:3 go test -tags simgrid -run '^TestShareErrorFloor$' -v -timeout 30m ./governor/sim/
func TestShareErrorFloor(t *testing.T) {
	for _, row := range simgridRows(t) {
		s := row.sim(t)
		m := &floorMeter{lack: newLackMeter(s)}
		s.onSettle = m.settle
		s.loop()
		sum := Summarize(s.result())
		must.Positive(t, m.ent)
		fmt.Printf("%s load %.1f seed %d: share error %.4f (report %.4f), whole-job floor %.4f, without preemption %.4f\n",
			row.cluster, row.load, row.seed, m.err/m.ent, sum.ShareError, m.whole/m.ent, m.kept/m.ent)
		must.InDelta(t, sum.ShareError, m.err/m.ent, 1e-3)
		must.LessEq(t, m.kept+1e-6, m.whole, must.Sprint("keeping running jobs cannot lower the floor"))
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
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.InDelta(t, tc.want, floorOf(tc.gpus, tc.fair, tc.sizes, tc.kept, tc.limit), 1e-9)
		})
	}
}

// floorMeter sums, over the samples, allot's distance from the
// entitlement and the two floors.
type floorMeter struct {
	lack                  *lackMeter
	seen                  int
	ent, err, whole, kept float64
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
	fair := FairShare(s.m.gpus, m.lack.weights, (&Result{Limit: m.lack.limits}).claim(smp))
	n := len(fair)
	all, held := make([][]int, n), make([][]int, n)
	running, none := make([]int, n), make([]int, n)
	for _, j := range s.jobs[:s.submitted] {
		if j.done || s.aboveLimit(j) {
			continue
		}
		i := s.m.tIdx[j.w.Tenant]
		all[i] = append(all[i], j.w.GPUs())
		if j.held {
			held[i] = append(held[i], j.w.GPUs())
		} else {
			running[i] += j.w.GPUs()
		}
	}
	for i := range fair {
		m.ent += fair[i]
		m.err += math.Abs(fair[i] - float64(smp.Tenant[i]))
	}
	m.whole += floorOf(s.m.gpus, fair, all, none, m.lack.limits)
	m.kept += floorOf(s.m.gpus, fair, held, running, m.lack.limits)
}

// floorOf is the least Σ |x_i − fair_i| over allocations x_i = kept_i +
// the GPUs of a subset of sizes_i, x_i no more than limits_i (0: none),
// Σ x_i ≤ gpus: a knapsack over the tenants by GPUs used.
func floorOf(gpus int, fair []float64, sizes [][]int, kept, limits []int) float64 {
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
			if !ok || x > gpus || (x > top && add > 0) {
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
	for _, v := range best {
		low = math.Min(low, v)
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
