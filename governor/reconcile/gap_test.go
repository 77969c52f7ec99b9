package reconcile

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestGapAfterBoundsTheLoopsShare: a fast cycle waits MinGap; a slow one
// (a long queue) waits cycleShare times its length, so the loop takes at
// most 1/(cycleShare+1) of a core; never longer than Interval.
func TestGapAfterBoundsTheLoopsShare(t *testing.T) {
	r := &Reconciler{MinGap: 200 * time.Millisecond, Interval: 5 * time.Second}
	cases := []struct {
		took, want time.Duration
	}{
		{0, 200 * time.Millisecond},
		{time.Millisecond, 200 * time.Millisecond},
		{200 * time.Millisecond / cycleShare, 200 * time.Millisecond},
		{30 * time.Millisecond, cycleShare * 30 * time.Millisecond},
		{400 * time.Millisecond, cycleShare * 400 * time.Millisecond},
		{time.Second, 5 * time.Second},
		{time.Minute, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.took), func(t *testing.T) {
			gap := r.gapAfter(c.took)
			must.Eq(t, c.want, gap)
			if c.took > 0 && gap < r.Interval {
				must.GreaterEq(t, cycleShare, float64(gap)/float64(c.took))
			}
		})
	}
}

// TestCycleRecordsHowLongItDecided: the gap after a cycle is read from
// the cycle's own decision time.
func TestCycleRecordsHowLongItDecided(t *testing.T) {
	r, _ := newReconciler(t, gpuJob("a", 2, true))
	must.Eq(t, 0, r.lastDecide())
	r.Cycle(context.Background())
	must.Positive(t, r.lastDecide())
}
