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
			why := plan.HeldBackBy(cfg, &tc.job, now)
			if tc.want == "" {
				must.Eq(t, "", why)
				return
			}
			must.StrContains(t, why, "waiting behind "+tc.want)
			must.StrHasPrefix(t, "order: ", why)
		})
	}
}

// A submission that fits waits for the next cycle while other queued
// jobs of its pool wait for capacity (Plan.Waiting), so it passes none of
// them; a job that is itself the only waiter (its resubmission), or of
// another pool, is admitted at once.
func TestHeldBackByWhileOthersWaitForCapacity(t *testing.T) {
	plan := &Plan{Waiting: map[string]PoolWait{"gpu": {Count: 2, First: "a/w1"}, "one": {Count: 1, First: "a/w"}}}
	cases := map[string]struct {
		job  Job
		want string
	}{
		"two wait in its pool":     {job: Job{Namespace: "b", ID: "new", NodePool: "gpu"}, want: "order: 2 queued jobs of node pool gpu wait for capacity (first a/w1)"},
		"one other waits":          {job: Job{Namespace: "b", ID: "new", NodePool: "one"}, want: "order: 1 queued jobs of node pool one wait for capacity (first a/w)"},
		"it is the only waiter":    {job: Job{Namespace: "a", ID: "w", NodePool: "one"}},
		"no one waits in its pool": {job: Job{Namespace: "b", ID: "new", NodePool: "cpu"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			why := plan.HeldBackBy(Config{}, &tc.job, t0)
			if tc.want == "" {
				must.Eq(t, "", why)
				return
			}
			must.StrHasPrefix(t, tc.want, why)
		})
	}
}

// Decide counts in Plan.Waiting only queued jobs that wait for capacity:
// not one held by its tenant's limit, nor one that fits no node.
func TestDecideCountsJobsWaitingForCapacity(t *testing.T) {
	ten := mkTenant("a").Quota("gpu", 32).Limit("gpu", 32).Build()
	small := mkTenant("b").Quota("gpu", 1).Limit("gpu", 1).Build()
	n := mkNode("n1").Pool("gpu").CPU(64000).Mem(512*1024).Devices(h200, 8, "memory", "143771 MiB").Build()
	running := mkJob("a", "run").State(Admitted).Pool("gpu").CPU(1000).Mem(1024).Device("nvidia/gpu", 4).Build()
	ra := alloc("a", "run", "g", n.ID, 1000, 1024, map[string]int{h200: 4})
	ra.Started, ra.StartedAt = true, t0.Add(-time.Hour)
	big := mkJob("a", "big").Pool("gpu").QueuedAt(t0.Add(-time.Minute)).CPU(1000).Mem(1024).Device("nvidia/gpu", 8).Build()
	never := mkJob("a", "never").Pool("gpu").QueuedAt(t0.Add(-time.Minute)).CPU(1000).Mem(1024).Device("nvidia/gpu", 16).Build()
	over := mkJob("b", "over").Pool("gpu").QueuedAt(t0.Add(-time.Minute)).CPU(1000).Mem(1024).Device("nvidia/gpu", 2).Build()
	s := snap([]*Tenant{ten, small}, []*Node{n}, []*Alloc{ra}, running, big, never, over)
	p := Decide(testConfig(), s)
	must.Eq(t, map[string]PoolWait{"gpu": {Count: 1, First: "a/big"}}, p.Waiting)
	must.Eq(t, "fit", firstFailed(p.Verdicts["a/big"].Checks).Name)
	must.True(t, firstFailed(p.Verdicts["a/never"].Checks).Permanent)
	must.Eq(t, "limit", firstFailed(p.Verdicts["b/over"].Checks).Name)
}
