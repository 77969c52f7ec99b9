package sim

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestKendallTau(t *testing.T) {
	cases := map[string]struct {
		a, b []float64
		want float64
	}{
		"same order":   {[]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, 1},
		"reversed":     {[]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		"one swap":     {[]float64{1, 2, 3}, []float64{1, 3, 2}, 1.0 / 3},
		"ties in both": {[]float64{1, 1, 2}, []float64{5, 5, 6}, 1},
		"all ties":     {[]float64{1, 1}, []float64{2, 3}, 0},
		"no pairs":     {[]float64{1}, []float64{1}, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.InDelta(t, tc.want, KendallTau(tc.a, tc.b), 1e-9)
		})
	}
}

func TestCompare(t *testing.T) {
	s := time.Second
	real := []Observed{{ID: "a", GPUs: 2, Submit: 0, Start: 1 * s, End: 11 * s}, {ID: "b", GPUs: 2, Submit: 0, Start: 3 * s, End: 13 * s}}
	r := &Result{GPUs: 4, Jobs: []JobResult{{ID: "a", GPUs: 2, Submit: 0, Start: 0, End: 10 * s}, {ID: "b", GPUs: 2, Submit: 0, Start: 0, End: 10 * s}}}
	f := Compare(real, r)
	must.Eq(t, 2, f.Jobs)
	must.Eq(t, 0.0, f.Tau) // the simulation ties them
	must.Eq(t, 2*s, f.MeanWaitReal)
	must.Eq(t, time.Duration(0), f.MeanWaitSim)
	must.Eq(t, 3*s, f.WaitDiff.Max)
	must.InDelta(t, 40.0/(4*13), f.UtilReal, 1e-9)
	must.InDelta(t, 1.0, f.UtilSim, 1e-9)
	must.Zero(t, f.PreemptionsReal+f.PreemptionsSim+f.PreemptedBoth)
}

// TestComparePreemptions: preemptions are counted per side, and a job
// preempted on both once.
func TestComparePreemptions(t *testing.T) {
	real := []Observed{{ID: "a", Preemptions: 2}, {ID: "b", Preemptions: 1}, {ID: "c"}}
	r := &Result{GPUs: 4, Jobs: []JobResult{{ID: "a", Preemptions: 1}, {ID: "b"}, {ID: "c", Preemptions: 3}}}
	f := Compare(real, r)
	must.Eq(t, 3, f.PreemptionsReal)
	must.Eq(t, 4, f.PreemptionsSim)
	must.Eq(t, 2, f.PreemptedReal)
	must.Eq(t, 2, f.PreemptedSim)
	must.Eq(t, 1, f.PreemptedBoth)
}
