package reconcile

import (
	"testing"
	"time"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/shoenig/test/must"
)

// The proxy's quick verdict judges backfill by the run time a cycle
// uses: allot.max-runtime, the job's estimate, else the learned run time
// (Config.Runtimes); a job whose run time is unknown never backfills.
func TestBackfillsUsesLearnedRuntimes(t *testing.T) {
	now := testNow()
	plan := &engine.Plan{Reservations: []engine.Reservation{{Job: "a/head", Pool: "gpu", Start: now.Add(time.Hour)}}}
	learned := func(d time.Duration) func(*engine.Job) time.Duration {
		return func(*engine.Job) time.Duration { return d }
	}
	cases := map[string]struct {
		job      engine.Job
		runtimes func(*engine.Job) time.Duration
		want     bool
	}{
		"unknown run time":          {job: engine.Job{NodePool: "gpu"}, want: false},
		"learned, ends in time":     {job: engine.Job{NodePool: "gpu"}, runtimes: learned(10 * time.Minute), want: true},
		"learned, outlives it":      {job: engine.Job{NodePool: "gpu"}, runtimes: learned(2 * time.Hour), want: false},
		"max-runtime beats learned": {job: engine.Job{NodePool: "gpu", MaxRuntime: 2 * time.Hour}, runtimes: learned(time.Minute), want: false},
		"other pool":                {job: engine.Job{NodePool: "cpu"}, runtimes: learned(time.Minute), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := engine.Config{Runtimes: tc.runtimes}
			must.Eq(t, tc.want, backfills(cfg, plan, &tc.job, now))
		})
	}
}
