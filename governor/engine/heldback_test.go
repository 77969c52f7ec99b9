package engine

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// The proxy's quick verdict judges backfill by the run time a cycle
// uses: allot.max-runtime, the job's estimate, else the learned run time
// (Config.Runtimes); a job whose run time is unknown never backfills, and
// the head itself and jobs of other pools are never held back.
func TestHeldBackByUsesLearnedRuntimes(t *testing.T) {
	now := t0
	plan := &Plan{Starving: map[string]string{"gpu": "a/head", "cpu": "a/cpuhead"},
		Reservations: []Reservation{{Job: "a/head", Pool: "gpu", Start: now.Add(time.Hour)}}}
	learned := func(d time.Duration) func(*Job) time.Duration {
		return func(*Job) time.Duration { return d }
	}
	cases := map[string]struct {
		job      Job
		runtimes func(*Job) time.Duration
		want     string
	}{
		"unknown run time":           {job: Job{NodePool: "gpu"}, want: "a/head"},
		"learned, ends in time":      {job: Job{NodePool: "gpu"}, runtimes: learned(10 * time.Minute), want: ""},
		"learned, outlives it":       {job: Job{NodePool: "gpu"}, runtimes: learned(2 * time.Hour), want: "a/head"},
		"max-runtime beats learned":  {job: Job{NodePool: "gpu", MaxRuntime: 2 * time.Hour}, runtimes: learned(time.Minute), want: "a/head"},
		"the head itself":            {job: Job{Namespace: "a", ID: "head", NodePool: "gpu"}, want: ""},
		"no reservation in its pool": {job: Job{NodePool: "cpu"}, runtimes: learned(time.Minute), want: "a/cpuhead"},
		"no starving head":           {job: Job{NodePool: "tpu"}, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := Config{Runtimes: tc.runtimes}
			must.Eq(t, tc.want, plan.HeldBackBy(cfg, &tc.job, now))
		})
	}
}
