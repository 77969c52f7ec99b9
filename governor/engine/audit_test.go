package engine

import (
	"math"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/quota"
)

// Regression tests for the engine side of SECURITY-AUDIT.md; each is
// named after the audit item it reproduces.

// governSystem is the test config with system jobs governed.
func governSystem() Config {
	cfg := testConfig()
	cfg.GovernSystemJobs = true
	return cfg
}

// systemJob builds a system job of ns asking one GPU per node.
func systemJob(ns, id string) *jobB {
	jb := mkJob(ns, id).Pool("gpu").Device("gpu", 1)
	jb.j.System = true
	return jb
}

// threeGPUNodes: three 8-GPU nodes in pool gpu and one CPU node elsewhere.
func threeGPUNodes() []*Node {
	return []*Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8), mkNode("c1").Build()}
}

func TestAudit4_SystemJobsRefusedByDefault(t *testing.T) {
	ml := mkTenant("ml").Limit("gpu", 8).Build()
	direct := systemJob("ml", "sys").State(Direct).Build()
	direct.Priority = 100
	queued := systemJob("ml", "held").Build()
	other := systemJob("free", "sys").State(Direct).Build() // not governed: only capacity
	p := Decide(testConfig(), snap([]*Tenant{ml}, threeGPUNodes(), nil, direct, queued, other))

	d, ok := p.Decision("ml", "sys")
	must.True(t, ok, must.Sprint("a direct system job in a governed namespace is held"))
	must.Eq(t, Hold, d.Action)
	must.StrContains(t, d.Reason, `system_jobs = "refuse"`)
	must.Eq(t, 50, d.Priority, must.Sprint("held at its class's priority, not 100"))
	v := p.Verdicts["ml/held"]
	must.Eq(t, Queued, v.State)
	must.StrContains(t, v.Reason, "type: system and sysbatch jobs are not admitted")
	must.True(t, v.Checks[len(v.Checks)-1].Permanent)
	_, ok = p.Decision("free", "sys")
	must.False(t, ok, must.Sprint("system jobs of ungoverned namespaces are left alone"))
}

func TestAudit4_SystemJobGovernedPerEligibleNode(t *testing.T) {
	cases := map[string]struct {
		limit  int64
		job    func() *Job
		allocs []*Alloc
		admit  bool
		hold   bool
		reason string
	}{
		"counted once per eligible node": {
			limit: 2, job: func() *Job { return systemJob("ml", "sys").Build() },
			reason: "limit: needs 3 gpu; tenant ml uses 0 of limit 2",
		},
		"admitted when every eligible node fits within the limit": {
			limit: 3, job: func() *Job { return systemJob("ml", "sys").Build() }, admit: true,
		},
		"nodes that already run it need nothing more": {
			limit: 2, job: func() *Job { return systemJob("ml", "sys").Build() }, reason: "limit: needs 2 gpu; tenant ml uses 1 of limit 2",
			allocs: []*Alloc{alloc("ml", "sys", "g", "n1", 100, 128, map[string]int{h200: 1})},
		},
		"admitted with the nodes that run it": {
			limit: 3, job: func() *Job { return systemJob("ml", "sys").Build() }, admit: true,
			allocs: []*Alloc{alloc("ml", "sys", "g", "n1", 100, 128, map[string]int{h200: 1})},
		},
		"a direct one at priority 100 is held whatever its usage": {
			limit: 8, job: func() *Job { j := systemJob("ml", "sys").State(Direct).Build(); j.Priority = 100; return j },
			hold: true, reason: "priority 100, above its class standard (50)",
		},
		"a direct one at its class's priority runs while within the limit": {
			limit: 8, job: func() *Job { j := systemJob("ml", "sys").State(Direct).Build(); j.Priority = 50; return j },
		},
		"a direct one over the limit is held": {
			limit: 2, job: func() *Job { j := systemJob("ml", "sys").State(Direct).Build(); j.Priority = 50; return j },
			hold: true, reason: "registered straight to Nomad over the tenant's limit: needs 3 gpu",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ml := mkTenant("ml").Quota("gpu", tc.limit).Limit("gpu", tc.limit).Build()
			p := Decide(governSystem(), snap([]*Tenant{ml}, threeGPUNodes(), tc.allocs, tc.job()))
			admit, hold := summarize(p)
			must.Eq(t, tc.admit, len(admit) == 1)
			must.Eq(t, tc.hold, len(hold) == 1)
			if tc.reason != "" {
				must.StrContains(t, p.Verdicts["ml/sys"].Reason, tc.reason)
			}
		})
	}
}

func TestAudit4_SystemJobNeedsFreeCapacityOnEveryNode(t *testing.T) {
	busy := []*Alloc{alloc("other", "big", "g", "n2", 100, 128, map[string]int{h200: 8})}
	p := Decide(governSystem(), snap([]*Tenant{mkTenant("ml").Build()}, threeGPUNodes(), busy, systemJob("ml", "sys").Build()))
	v := p.Verdicts["ml/sys"]
	must.Eq(t, Queued, v.State)
	must.StrContains(t, v.Reason, `fit: system job group "g": node n2 (one of the 3 eligible nodes) has no free capacity`)
}

func TestAudit4_UnusableClassProtectsNoVictim(t *testing.T) {
	// A child inheriting allot.class=production from its parent (or a job
	// written straight to Nomad with it) is preempted like a job of its
	// tenant's default class: the tenant may not use production.
	sc := twoTenants()
	sc.run("b", "child", "production", "n1", 4, 1).run("b", "own", "standard", "n2", 4, 30)
	sc.queue(gpuJob("a", "reclaim", "standard", 4))
	p := Decide(testConfig(), sc.snap())
	must.Eq(t, []string{"child<-a/reclaim"}, victimsOf(p), must.Sprint("the cheaper victim by lost work, production or not"))

	sc = twoTenants()
	sc.tenants[1] = mkTenant("b").Quota("gpu", 4).Limit("gpu", 8).Classes("production", "standard").Build()
	sc.run("b", "child", "production", "n1", 4, 1).run("b", "own", "standard", "n2", 4, 30)
	sc.queue(gpuJob("a", "reclaim", "standard", 4))
	p = Decide(testConfig(), sc.snap())
	must.Eq(t, []string{"own<-a/reclaim"}, victimsOf(p), must.Sprint("control: a tenant allowed production keeps it unpreemptible"))
}

func TestAudit6_DeviceCountOverflow(t *testing.T) {
	// The conversion bounds a uint64 count to MaxInt32 (cluster tests); the
	// engine's arithmetic must neither wrap nor go negative with it.
	ml := mkTenant("ml").Quota("gpu", 4).Limit("gpu", 4).Build()
	huge := mkJob("ml", "huge").Pool("gpu").Count(math.MaxInt32).Device("gpu", math.MaxInt32).Build()
	direct := mkJob("ml", "direct").State(Direct).Pool("gpu").Count(math.MaxInt32).Device("gpu", math.MaxInt32).Submitted(t0).Build()
	next := mkJob("ml", "next").Pool("gpu").Device("gpu", 4).Build()
	p := Decide(testConfig(), snap([]*Tenant{ml}, []*Node{gpuNode("n1", 8)}, nil, huge, direct, next))

	must.StrContains(t, p.Verdicts["ml/huge"].Reason, "limit: needs")
	d, ok := p.Decision("ml", "direct")
	must.True(t, ok)
	must.Eq(t, Hold, d.Action, must.Sprint("a direct job asking for more than the limit is held"))
	admit, _ := summarize(p)
	must.Eq(t, []string{"next"}, admit, must.Sprint("held jobs hold nothing: the tenant's 4 GPUs are free"))
	for _, ts := range p.Tenants {
		for r, n := range ts.Usage {
			must.NonNegative(t, n, must.Sprintf("usage of %s", r))
		}
	}

	neg := mkJob("ml", "neg").Pool("gpu").Device("gpu", -4).Build()
	p = Decide(testConfig(), snap([]*Tenant{ml}, []*Node{gpuNode("n1", 8)}, nil, neg))
	must.StrContains(t, p.Verdicts["ml/neg"].Reason, "fit: never fits", must.Sprint("a negative count never places (nor frees) anything"))
}

func TestAudit7_RerunOfFinishedBatchJobIsFree(t *testing.T) {
	ml := func() *Tenant { return mkTenant("ml").Quota("gpu", 4).Limit("gpu", 4).Build() }
	nodes := []*Node{gpuNode("n1", 8)}
	other := alloc("ml", "other", "g", "n1", 100, 128, map[string]int{h200: 2})
	// The first run of "done" finished before its latest write (index 20).
	old := alloc("ml", "done", "g", "n1", 100, 128, map[string]int{h200: 4})
	old.Live, old.Complete, old.Started, old.CreateIndex = false, true, true, 12
	rerun := mkJob("ml", "done").Pool("gpu").Device("nvidia/gpu", 4).Build()
	rerun.Version = 20
	otherJob := mkJob("ml", "other").State(Admitted).Pool("gpu").Device("nvidia/gpu", 2).Build()

	t.Run("queued re-run", func(t *testing.T) {
		p := Decide(testConfig(), snap([]*Tenant{ml()}, nodes, []*Alloc{other, old}, otherJob, rerun))
		must.StrContains(t, p.Verdicts["ml/done"].Reason, "limit: needs 4 gpu; tenant ml uses 2 of limit 4")
	})
	t.Run("submission through the proxy", func(t *testing.T) {
		b := Prepare(testConfig(), snap([]*Tenant{ml()}, nodes, []*Alloc{other, old}, otherJob))
		v := b.Decide(rerun, false)
		must.Eq(t, Queued, v.State)
		must.StrContains(t, v.Reason, "limit: needs 4 gpu; tenant ml uses 2 of limit 4")
	})
	t.Run("a direct re-run reserves what it will run", func(t *testing.T) {
		direct := *rerun
		direct.State, direct.SubmittedAt = Direct, t0
		p := Decide(testConfig(), snap([]*Tenant{ml()}, nodes, []*Alloc{other, old}, otherJob, &direct))
		d, ok := p.Decision("ml", "done")
		must.True(t, ok)
		must.Eq(t, Hold, d.Action)
	})
	t.Run("control: finished allocations of the running version count as placed", func(t *testing.T) {
		cur := *old
		cur.CreateIndex = 21
		running := *rerun
		running.State = Admitted
		running.Groups = append([]Group(nil), running.Groups...)
		running.Groups[0].Count = 2
		live := alloc("ml", "done", "g", "n1", 100, 128, map[string]int{h200: 4})
		live.ID = "live"
		p := Decide(testConfig(), snap([]*Tenant{ml()}, nodes, []*Alloc{&cur, live}, &running))
		must.Eq(t, int64(4), p.Tenants[0].Usage["gpu"], must.Sprint("only the live allocation holds GPUs; nothing is reserved for the finished one"))
	})
	t.Run("the gang timeout ignores an earlier run's allocations", func(t *testing.T) {
		cfg := testConfig()
		cfg.GangTimeout = time.Minute
		adm := *rerun
		adm.State, adm.AdmittedAt = Admitted, t0.Add(-time.Hour)
		p := Decide(cfg, snap([]*Tenant{ml()}, nodes, []*Alloc{old}, &adm))
		d, ok := p.Decision("ml", "done")
		must.True(t, ok)
		must.Eq(t, Requeue, d.Action)
		must.StrContains(t, d.Reason, "only 0 of 1 allocations started")
	})
}

func TestAudit8_NeverFittingHeadBlocksNothing(t *testing.T) {
	tenants := []*Tenant{mkTenant("a").Build(), mkTenant("b").Classes("production", "standard").Build()}
	nodes := []*Node{gpuNode("n1", 8)}
	never := mkJob("a", "never").Class("high").Pool("gpu").Device("gpu", 1).
		Constraint("${meta.rack}", "=", "nowhere").QueuedAt(t0.Add(-26 * 365 * 24 * time.Hour)).Build()
	prod := mkJob("b", "prod").Class("production").Pool("gpu").Device("gpu", 1).QueuedAt(t0).Build()
	p := Decide(testConfig(), snap(tenants, nodes, nil, never, prod))
	admit, _ := summarize(p)
	must.Eq(t, []string{"prod"}, admit)
	must.MapEmpty(t, p.Starving)
	v := p.Verdicts["a/never"]
	must.StrContains(t, v.Reason, "fit: never fits node pool gpu")
	must.True(t, v.Checks[len(v.Checks)-1].Permanent)

	// Control: a head that fits the pool once capacity frees up does starve
	// it (TestBackfillAndStarvation shows the blocking).
	waits := mkJob("a", "waits").Class("high").Pool("gpu").Device("gpu", 8).QueuedAt(t0.Add(-time.Hour)).Build()
	busy := []*Alloc{alloc("z", "busy", "g", "n1", 100, 128, map[string]int{h200: 4})}
	p = Decide(testConfig(), snap(tenants, nodes, busy, waits, prod))
	must.Eq(t, map[string]string{"gpu": "a/waits"}, p.Starving)
}

func TestAudit12_UpdateToBiggerAllocIsFree(t *testing.T) {
	ml := func() *Tenant { return mkTenant("ml").Quota("gpu", 8).Limit("gpu", 8).Build() }
	nodes := []*Node{gpuNode("n1", 8), gpuNode("n2", 8)}
	// "grow" runs one allocation of 2 GPUs; another job holds 4.
	grow := alloc("ml", "grow", "g", "n1", 100, 128, map[string]int{h200: 2})
	other := alloc("ml", "other", "g", "n2", 100, 128, map[string]int{h200: 4})
	otherJob := mkJob("ml", "other").State(Admitted).Pool("gpu").Device("nvidia/gpu", 4).Build()
	base := func() *Base {
		return Prepare(testConfig(), snap([]*Tenant{ml()}, nodes, []*Alloc{grow, other}, otherJob))
	}
	update := func(gpus int) *Job { return mkJob("ml", "grow").Pool("gpu").Device("nvidia/gpu", gpus).Build() }

	t.Run("1x2 to 1x8 GPUs is weighed by the 8 it runs, not 0", func(t *testing.T) {
		v := base().Decide(update(8), false)
		must.Eq(t, Queued, v.State)
		must.StrContains(t, v.Reason, "limit: needs 8 gpu; tenant ml uses 4 of limit 8")
		must.Eq(t, 1, v.Replaces)
	})
	t.Run("1x2 to 1x4 fits once the replaced allocation is freed", func(t *testing.T) {
		b := base()
		v := b.Decide(update(4), false)
		must.Eq(t, Admitted, v.State, must.Sprint(v.Reason))
		must.Eq(t, 1, v.Replaces)
		again := b.Decide(update(8), false)
		must.StrContains(t, again.Reason, "tenant ml uses 4 of limit 8", must.Sprint("an uncommitted decision leaves the base as it was"))
	})
	t.Run("a count change of the same shape is weighed by what it adds", func(t *testing.T) {
		v := base().Decide(update(2), false)
		must.Eq(t, Admitted, v.State)
		must.Eq(t, 0, v.Replaces)
	})
	t.Run("a cycle accounts the new shape in place of the old", func(t *testing.T) {
		adm := update(6)
		adm.State = Admitted
		queued := mkJob("ml", "next").Pool("gpu").Device("gpu", 1).Build()
		p := Decide(testConfig(), snap([]*Tenant{ml()}, nodes, []*Alloc{grow, other}, otherJob, adm, queued))
		must.StrContains(t, p.Verdicts["ml/next"].Reason, "limit: needs 1 gpu; tenant ml uses 10 of limit 8")
	})
}

func TestAudit18_ResubmitSkipsBackoffAndForgetsPreemptor(t *testing.T) {
	cfg := testConfig()
	cfg.BackoffBase, cfg.BackoffCap = 30*time.Second, 10*time.Minute
	ml := mkTenant("ml").Quota("gpu", 8).Build()
	stored := mkJob("ml", "victim").Pool("gpu").Device("gpu", 1).Build()
	stored.Requeues, stored.RequeuedAt, stored.PreemptedBy = 2, t0, "ml/boss"
	resubmit := mkJob("ml", "victim").Pool("gpu").Device("gpu", 1).Build() // no record: dropped by the proxy

	s := snap([]*Tenant{ml}, []*Node{gpuNode("n1", 8)}, nil, stored)
	v := Prepare(cfg, s).Decide(resubmit, false)
	must.Eq(t, Queued, v.State)
	must.StrContains(t, v.Reason, "backoff: requeued 2 times; backs off for 50s more")

	s.Now = t0.Add(2 * time.Minute)
	v = Prepare(cfg, s).Decide(resubmit, false)
	must.Eq(t, Admitted, v.State, must.Sprint("control: once the back-off passed it is admitted"))
}

func TestAudit23_DispatchedChildIsStoppedNotRequeued(t *testing.T) {
	t.Run("a preemption victim", func(t *testing.T) {
		sc := twoTenants()
		sc.run("b", "child", "standard", "n1", 4, 1).run("b", "own", "standard", "n2", 4, 30)
		sc.jobs[0].Dispatched = true
		sc.queue(gpuJob("a", "reclaim", "standard", 4))
		p := Decide(testConfig(), sc.snap())
		d, ok := p.Decision("b", "child")
		must.True(t, ok, must.Sprint("borrowed capacity held by a dispatched child is reclaimable"))
		must.Eq(t, Stop, d.Action)
		must.Eq(t, "a/reclaim", d.Preemptor)
		must.StrContains(t, d.Reason, "stopped, not requeued")
		must.Eq(t, Stopped, p.Verdicts["b/child"].State)
	})
	t.Run("over its tenant's limit", func(t *testing.T) {
		ml := mkTenant("ml").Limit("gpu", 4).Build()
		run := alloc("ml", "run", "g", "n1", 100, 128, map[string]int{h200: 4})
		runJob := mkJob("ml", "run").State(Admitted).Pool("gpu").Device("nvidia/gpu", 4).Build()
		child := mkJob("ml", "param/dispatch-1").State(Direct).Pool("gpu").Device("gpu", 2).Submitted(t0).Build()
		child.Dispatched = true
		p := Decide(testConfig(), snap([]*Tenant{ml}, []*Node{gpuNode("n1", 8)}, []*Alloc{run}, runJob, child))
		d, ok := p.Decision("ml", "param/dispatch-1")
		must.True(t, ok)
		must.Eq(t, Stop, d.Action)
		must.StrContains(t, d.Reason, "dispatched child over the tenant's limit, stopped")
		must.Eq(t, int64(4), usageOf(p, "ml")[quota.GPU])
	})
}

func usageOf(p *Plan, ns string) quota.Vector {
	for _, ts := range p.Tenants {
		if ts.Namespace == ns {
			return ts.Usage
		}
	}
	return nil
}

func TestDeviceIDMatches(t *testing.T) {
	for name, want := range map[string]bool{"gpu": true, "nvidia/gpu": true, "nvidia/gpu/H200": true,
		"npu": false, "amd/gpu": false, "nvidia/gpu/A100": false, "nvidia": false, "gp": false, "nvidia/g": false} {
		must.Eq(t, want, deviceIDMatches(name, h200), must.Sprint(name))
	}
}

func TestAudit8_GangLargerThanThePoolNeverFits(t *testing.T) {
	// Every allocation fits a node, but not 3 × 8 GPUs on two 8-GPU nodes.
	big := mkJob("a", "big").Pool("gpu").Count(3).Device("gpu", 8).QueuedAt(t0.Add(-time.Hour)).Build()
	small := mkJob("a", "small").Pool("gpu").Device("gpu", 1).Build()
	p := Decide(testConfig(), snap([]*Tenant{mkTenant("a").Build()}, []*Node{gpuNode("n1", 8), gpuNode("n2", 8)}, nil, big, small))
	must.StrContains(t, p.Verdicts["a/big"].Reason, `fit: never fits node pool gpu: group "g": at most 2 of 3 allocations`)
	admit, _ := summarize(p)
	must.Eq(t, []string{"small"}, admit)
}

func TestAudit24_ReservationWithCallerSetDeadStatusCounts(t *testing.T) {
	ml := mkTenant("ml").Quota("gpu", 4).Limit("gpu", 4).Build()
	res := mkJob("ml", "reserved").State(Admitted).Pool("gpu").Device("gpu", 4).Build()
	res.Dead, res.Reserved = true, true // "Status":"dead" in the caller's body
	next := mkJob("ml", "next").Pool("gpu").Device("gpu", 1).Build()
	p := Decide(testConfig(), snap([]*Tenant{ml}, []*Node{gpuNode("n1", 8)}, nil, res, next))
	must.StrContains(t, p.Verdicts["ml/next"].Reason, "limit: needs 1 gpu; tenant ml uses 4 of limit 4")
}
