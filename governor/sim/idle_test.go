package sim

import (
	"testing"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/shoenig/test/must"
)

// TestIdleSplit checks the idle split of every sample: free GPUs split by
// cause add up to the free GPUs (plus those of partly placed jobs) when
// work waits and to nothing when none does; only allot has governor
// causes; the summary integrates the samples.
func TestIdleSplit(t *testing.T) {
	sc := smallScenario(t, 2)
	for _, p := range Policies() {
		t.Run(string(p), func(t *testing.T) {
			r := run(t, sc, p, nil)
			sawIdle := false
			for _, smp := range r.Samples {
				sum := 0
				for _, n := range smp.Idle {
					must.NonNegative(t, n)
					sum += n
				}
				free := r.GPUs - smp.Allocated
				must.LessEq(t, free+smp.Allocated-smp.Useful, sum, must.Sprintf("t=%v", smp.T))
				if sum > 0 {
					sawIdle = true
					must.Eq(t, free+smp.Allocated-smp.Useful, sum, must.Sprintf("t=%v: split %v", smp.T, smp.Idle))
				}
				if p != Allot {
					must.Zero(t, smp.Idle[IdleLimits]+smp.Idle[IdleReservation]+smp.Idle[IdleHold]+smp.Idle[IdleChurn])
				}
			}
			must.True(t, sawIdle)
			s := Summarize(r)
			var total float64
			for _, c := range IdleCauses() {
				total += s.IdleWhileWaiting[c.String()]
			}
			must.InDelta(t, s.IdleWaitingTotal, total, 1e-6)
			must.Positive(t, s.IdleWaitingTotal)
		})
	}
}

// TestCauseOf: each failing check of a held job's verdict names the
// cause that keeps it off free GPUs; an order check that names a cohort
// is a borrow hold's (engine: checkBorrowHold), one that does not a
// reservation's.
func TestCauseOf(t *testing.T) {
	cases := map[string]struct {
		check *engine.Check
		want  IdleCause
	}{
		"no verdict yet":     {nil, IdleCycle},
		"quota":              {&engine.Check{Name: "quota", Cohort: "default"}, IdleLimits},
		"limit":              {&engine.Check{Name: "limit"}, IdleLimits},
		"behind reservation": {&engine.Check{Name: "order", Detail: "waiting behind a/big"}, IdleReservation},
		"borrow hold":        {&engine.Check{Name: "order", Cohort: "default"}, IdleHold},
		"backoff":            {&engine.Check{Name: "backoff"}, IdleChurn},
		"fit (fits now)":     {&engine.Check{Name: "fit"}, IdleCycle},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.Eq(t, tc.want, causeOf(tc.check))
		})
	}
}
