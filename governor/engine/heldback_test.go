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
	// c may borrow what a and b lend (32 + 1) on top of its 2: 36 is more
	// than it could ever get.
	lots := mkJob("c", "lots").Pool("gpu").QueuedAt(t0.Add(-time.Minute)).CPU(1000).Mem(1024).Device("nvidia/gpu", 36).Build()
	s := snap([]*Tenant{ten, small, mkTenant("c").Quota("gpu", 2).Build()}, []*Node{n}, []*Alloc{ra}, running, big, never, over, lots)
	p := Decide(testConfig(), s)
	must.Eq(t, map[string]PoolWait{"gpu": {Count: 1, First: "a/big"}}, p.Waiting)
	must.Eq(t, "fit", firstFailed(p.Verdicts["a/big"].Checks).Name)
	must.True(t, firstFailed(p.Verdicts["a/never"].Checks).Permanent)
	for key, check := range map[string]string{"b/over": "limit", "c/lots": "quota"} {
		c := firstFailed(p.Verdicts[key].Checks)
		must.Eq(t, check, c.Name)
		must.True(t, c.Permanent, must.Sprintf("%s needs more than it could ever get: %s", key, c.Text()))
		must.StrContains(t, c.Text(), "more than it could ever get")
	}
	for _, d := range p.Decisions {
		must.NotEq(t, Requeue, d.Action, must.Sprintf("no preemption for a permanent hold: %+v", d))
	}
}

// A quota or limit check is permanent only when the need itself is out of
// reach: a tenant at its limit, or whose cohort lends all it can, waits.
func TestQuotaAndLimitNeverOnlyOutOfReach(t *testing.T) {
	lender := mkTenant("lender").Quota("gpu", 6).Build()
	cases := []struct {
		name       string
		tenant     *Tenant
		used, need int64
		check      string
		permanent  bool
	}{
		{"limit reached", mkTenant("a").Quota("gpu", 8).Limit("gpu", 8).Build(), 8, 4, "limit", false},
		{"above the limit", mkTenant("a").Quota("gpu", 8).Limit("gpu", 8).Build(), 0, 9, "limit", true},
		{"borrows what is lent now", mkTenant("a").Quota("gpu", 2).Build(), 2, 6, "quota", false},
		{"nominal plus all lending", mkTenant("a").Quota("gpu", 2).Build(), 0, 8, "", false},
		{"above nominal plus all lending", mkTenant("a").Quota("gpu", 2).Build(), 0, 9, "quota", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []*Node{mkNode("n1").Pool("gpu").CPU(64000).Mem(512*1024).Devices(h200, 16, "memory", "143771 MiB").Build()}
			var allocs []*Alloc
			jobs := []*Job{mkJob("lender", "l").State(Admitted).Pool("gpu").CPU(100).Mem(100).Device("nvidia/gpu", 6).Build()}
			allocs = append(allocs, alloc("lender", "l", "g", "n1", 100, 100, map[string]int{h200: 6}))
			if tc.used > 0 {
				jobs = append(jobs, mkJob("a", "run").State(Admitted).Pool("gpu").CPU(100).Mem(100).Device("nvidia/gpu", int(tc.used)).Build())
				allocs = append(allocs, alloc("a", "run", "g", "n1", 100, 100, map[string]int{h200: int(tc.used)}))
			}
			if tc.check == "" { // the lender's job ends: all it lends is free
				jobs, allocs = jobs[1:], allocs[1:]
			}
			jobs = append(jobs, mkJob("a", "new").Pool("gpu").QueuedAt(t0.Add(-time.Minute)).CPU(100).Mem(100).Device("nvidia/gpu", int(tc.need)).Build())
			p := Decide(testConfig(), snap([]*Tenant{tc.tenant, lender}, nodes, allocs, jobs...))
			v := p.Verdicts["a/new"]
			c := firstFailed(v.Checks)
			if tc.check == "" {
				must.Nil(t, c, must.Sprintf("admitted: %+v", v))
				return
			}
			must.NotNil(t, c)
			must.Eq(t, tc.check, c.Name)
			must.Eq(t, tc.permanent, c.Permanent, must.Sprint(c.Text()))
		})
	}
}

// A submission the Base admits in another node pool of a cohort whose
// lending a starved head holds waits for the next cycle when it borrows
// and would run past the time the head may borrow (Plan.BorrowHeldBy);
// the Base alone, knowing no queue, admits it. A job within its nominal
// quota and one that ends before the hold's start are not held back.
func TestBorrowHeldByAcrossNodePools(t *testing.T) {
	now := t0.Add(10 * time.Second)
	sc := borrowScene(60)
	sc.nodes = append(sc.nodes, mkNode("o1").Pool("other").Devices(h200, 8, "memory", "143771 MiB").Build())
	cfg := testConfig()
	plan := Decide(cfg, sc.snap())
	must.Eq(t, []BorrowHold{{Job: "a/big", Cohort: "default", Start: now.Add(time.Hour), Entitled: borrowSceneEntitled}}, plan.BorrowHolds)
	base := Prepare(cfg, sc.snap())
	cases := map[string]struct {
		ns      string
		runtime time.Duration
		want    string
	}{
		"borrows past the hold": {ns: "b", runtime: 3 * time.Hour, want: "order: would borrow from cohort default, whose lending is held for a/big"},
		"unknown run time":      {ns: "b", want: "whose lending is held for a/big"},
		"ends before it starts": {ns: "b", runtime: 30 * time.Minute},
		"within nominal quota":  {ns: "c", runtime: 3 * time.Hour},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := mkJob(tc.ns, "new").Class("standard").Pool("other").Device("nvidia/gpu", 2).Build()
			j.QueuedAt, j.MaxRuntime = now, tc.runtime
			v := base.Decide(j, false)
			must.Eq(t, Admitted, v.State, must.Sprintf("the Base admits it: %s", v.Reason))
			why := plan.BorrowHeldBy(cfg, j, v.Checks, now)
			if tc.want == "" {
				must.Eq(t, "", why)
				return
			}
			must.StrContains(t, why, tc.want)
		})
	}
}

// The hold's head itself and a job borrowing from another cohort are not
// held back by a borrow hold.
func TestBorrowHeldByOnlyOthersInItsCohort(t *testing.T) {
	plan := &Plan{BorrowHolds: []BorrowHold{{Job: "a/big", Cohort: "default"}}}
	borrowing := func(cohort string) []Check {
		return []Check{{Name: "quota", OK: true, Tenant: "a", Cohort: cohort,
			Amounts: []Amount{{Resource: "gpu", Need: 8, Used: 2, Cap: 8, Borrowable: 4}}}}
	}
	other := &Job{Namespace: "b", ID: "x"}
	must.StrContains(t, plan.BorrowHeldBy(Config{}, other, borrowing("default"), t0), "held for a/big")
	must.Eq(t, "", plan.BorrowHeldBy(Config{}, &Job{Namespace: "a", ID: "big"}, borrowing("default"), t0))
	must.Eq(t, "", plan.BorrowHeldBy(Config{}, other, borrowing("gpus2"), t0))
}
