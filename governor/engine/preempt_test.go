package engine

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/quota"
)

// running builds an admitted job of class class holding gpus H200 on node
// in one allocation that started at start and last checkpointed at ckpt
// (zero: never).
func running(ns, id, class, node string, gpus int, start, ckpt time.Time) (*Job, *Alloc) {
	j := mkJob(ns, id).State(Admitted).Class(class).Pool("gpu").Device("nvidia/gpu", gpus).Build()
	a := alloc(ns, id, "g", node, 100, 128, map[string]int{h200: gpus})
	a.Started, a.StartedAt, a.LastCheckpoint = true, start, ckpt
	return j, a
}

// scene is a preemption test fixture: tenants, GPU nodes, running jobs.
type scene struct {
	tenants []*Tenant
	nodes   []*Node
	allocs  []*Alloc
	jobs    []*Job
	claims  map[string]time.Time
}

func (sc *scene) run(ns, id, class, node string, gpus int, lostMin int) *scene {
	now := t0.Add(10 * time.Second)
	j, a := running(ns, id, class, node, gpus, now.Add(-time.Hour), now.Add(-time.Duration(lostMin)*time.Minute))
	sc.jobs, sc.allocs = append(sc.jobs, j), append(sc.allocs, a)
	return sc
}

// runGang adds a running job of n allocations of gpus GPUs each on
// node, every one lostMin minutes past its last checkpoint.
func (sc *scene) runGang(ns, id, class, node string, n, gpus, lostMin int) *scene {
	now := t0.Add(10 * time.Second)
	sc.jobs = append(sc.jobs, mkJob(ns, id).State(Admitted).Class(class).Pool("gpu").Count(n).Device("nvidia/gpu", gpus).Build())
	for i := 0; i < n; i++ {
		a := alloc(ns, id, "g", node, 100, 128, map[string]int{h200: gpus})
		a.ID += fmt.Sprint("-", i)
		a.Started, a.StartedAt, a.LastCheckpoint = true, now.Add(-time.Hour), now.Add(-time.Duration(lostMin)*time.Minute)
		sc.allocs = append(sc.allocs, a)
	}
	return sc
}

// stoppingFor makes the i-th running job a victim the last cycle requeued
// for preemptor, its allocation still stopping in Nomad.
func (sc *scene) stoppingFor(i int, preemptor string) {
	sc.jobs[i].State, sc.jobs[i].PreemptedBy, sc.jobs[i].RequeuedAt = Queued, preemptor, t0
	sc.allocs[i].Live, sc.allocs[i].Stopping = false, true
}

func (sc *scene) queue(j *Job) *scene { sc.jobs = append(sc.jobs, j); return sc }

// claimedSince records, as a previous plan would have (Plan.Claims),
// that job key became a claim at since.
func (sc *scene) claimedSince(key string, since time.Time) *scene {
	if sc.claims == nil {
		sc.claims = map[string]time.Time{}
	}
	sc.claims[key] = since
	return sc
}

func (sc *scene) snap() *Snapshot {
	s := snap(sc.tenants, sc.nodes, sc.allocs, sc.jobs...)
	s.Claims = sc.claims
	return s
}

// saving marks the jobs ids of sc, and only those, as saving a
// checkpoint when stopped (markSaving).
func saving(sc *scene, ids ...string) *scene {
	markSaving(&Snapshot{Jobs: sc.jobs}, func(j *Job) bool { return slices.Contains(ids, j.ID) })
	return sc
}

// twoTenants: a and b, nominal 4 GPUs each, limit 8, on two 4-GPU nodes.
func twoTenants() *scene {
	return &scene{tenants: []*Tenant{
		mkTenant("a").Quota("gpu", 4).Limit("gpu", 8).Build(),
		mkTenant("b").Quota("gpu", 4).Limit("gpu", 8).Build(),
	}, nodes: []*Node{gpuNode("n1", 4), gpuNode("n2", 4)}}
}

// onlyPreemption asserts that plan p holds exactly one preemption, of
// the given cause, and returns it.
func onlyPreemption(t *testing.T, p *Plan, cause string) Preemption {
	t.Helper()
	must.SliceLen(t, 1, p.Preemptions)
	must.Eq(t, cause, p.Preemptions[0].Cause)
	return p.Preemptions[0]
}

func victimsOf(p *Plan) []string {
	var out []string
	for _, d := range p.Decisions {
		if d.Action == Requeue {
			out = append(out, d.JobID+"<-"+d.Preemptor)
		}
	}
	sort.Strings(out)
	return out
}

func gpuJob(ns, id, class string, gpus int) *Job {
	return mkJob(ns, id).Class(class).Pool("gpu").Device("nvidia/gpu", gpus).Build()
}

// With more candidates than the exhaustive search takes (exactSearchMax),
// reclaim still takes a victim with a fresh checkpoint before the lower
// class's jobs that would lose more than 30 minutes (freshFirst orders
// the candidates the greedy search walks).
func TestReclaimTakesFreshCheckpointsFirstAmongMany(t *testing.T) {
	sc := &scene{tenants: []*Tenant{mkTenant("a").Quota("gpu", 4).Limit("gpu", 16).Build(), mkTenant("b").Quota("gpu", 8).Build()},
		nodes: []*Node{gpuNode("n1", 4), gpuNode("n2", 4), gpuNode("n3", 4)}}
	for i := 0; i < 11; i++ {
		sc.run("a", fmt.Sprintf("lo%02d", i), "low", fmt.Sprintf("n%d", 1+i/4), 1, 50)
	}
	sc.run("a", "fresh", "standard", "n3", 1, 5).queue(gpuJob("b", "boss", "standard", 1))
	p := Decide(testConfig(), sc.snap())
	must.Eq(t, []string{"fresh<-b/boss"}, victimsOf(p))
	must.StrContains(t, p.Verdicts["b/boss"].Reason, "(reclaim)")
}

// Beyond the exhaustive search too, a reclaim ranks victims by the device
// time they throw away: a 4-GPU job 40 minutes past its checkpoint goes
// after a 1-GPU job 45 minutes past its own.
func TestReclaimRanksByDeviceTimeAmongMany(t *testing.T) {
	sc := &scene{tenants: []*Tenant{mkTenant("a").Quota("gpu", 4).Limit("gpu", 16).Build(), mkTenant("b").Quota("gpu", 8).Build()},
		nodes: []*Node{gpuNode("n1", 4), gpuNode("n2", 4), gpuNode("n3", 4)}}
	sc.run("a", "wide", "low", "n1", 4, 40)
	for i := 0; i < 8; i++ {
		sc.run("a", fmt.Sprintf("s%d", i), "low", fmt.Sprintf("n%d", 2+i/4), 1, 45)
	}
	sc.queue(gpuJob("b", "boss", "standard", 1))
	p := Decide(testConfig(), sc.snap())
	must.Eq(t, []string{"s0<-b/boss"}, victimsOf(p), must.Sprint("not wide: 160 GPU-minutes against 45"))
}

// A reclaim whose fewest victims lose more than 30 minutes of work takes
// more victims instead when they stop no more such jobs and no higher
// class, and throw away less device time (exact search).
func TestReclaimTakesMoreVictimsThatThrowAwayLess(t *testing.T) {
	// a borrows 12 GPUs on three 4-GPU nodes: a 4-GPU job on each of n1
	// and n2, 50 minutes past their checkpoints, and two 2-GPU jobs on
	// n3. b, within its nominal, needs 4 GPUs on one node.
	scene := func(pairClass string) *scene {
		sc := &scene{tenants: []*Tenant{mkTenant("a").Quota("gpu", 4).Limit("gpu", 16).Build(), mkTenant("b").Quota("gpu", 8).Build()},
			nodes: []*Node{gpuNode("n1", 4), gpuNode("n2", 4), gpuNode("n3", 4)}}
		sc.run("a", "wide1", "low", "n1", 4, 50).run("a", "wide2", "low", "n2", 4, 50)
		return sc.run("a", "x", pairClass, "n3", 2, 40).run("a", "y", "low", "n3", 2, 5).
			queue(gpuJob("b", "boss", "standard", 4))
	}
	cases := map[string]struct {
		pairClass string
		victims   []string
	}{
		"the pair throws away 90 GPU-minutes, a 4-GPU job 200": {"low", []string{"x<-b/boss", "y<-b/boss"}},
		"not when the pair stops a higher class":               {"standard", []string{"wide1<-b/boss"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Decide(testConfig(), scene(tc.pairClass).snap())
			must.Eq(t, tc.victims, victimsOf(p))
		})
	}
}

func TestPreemptionRules(t *testing.T) {
	cases := map[string]struct {
		sc      *scene
		cfg     func(*Config)
		victims []string
		reason  string // substring of the preemptor's verdict reason
	}{
		"reclaim takes the borrower's jobs that lose the least work": {
			sc: twoTenants().run("a", "a1", "low", "n1", 2, 50).run("a", "a2", "low", "n1", 2, 1).
				run("a", "a3", "low", "n2", 2, 2).run("a", "a4", "low", "n2", 2, 30).
				queue(mkJob("b", "boss").Class("standard").Pool("gpu").Count(2).Device("nvidia/gpu", 2).Build()),
			victims: []string{"a2<-b/boss", "a3<-b/boss"},
			reason:  "preempting a/a2, a/a3 (reclaim)",
		},
		"a 4-GPU allocation needs its victims on one node, the pair losing least": {
			sc: twoTenants().run("a", "a1", "low", "n1", 2, 1).run("a", "a2", "low", "n1", 2, 40).
				run("a", "a3", "low", "n2", 2, 2).run("a", "a4", "low", "n2", 2, 30).
				queue(mkJob("b", "boss").Class("standard").Pool("gpu").Device("nvidia/gpu", 4).Build()),
			victims: []string{"a3<-b/boss", "a4<-b/boss"},
		},
		"one victim beats two cheaper ones": {
			sc: twoTenants().run("a", "big", "low", "n1", 4, 20).run("a", "s1", "low", "n2", 2, 1).run("a", "s2", "low", "n2", 2, 2).
				queue(gpuJob("b", "boss", "standard", 4)),
			victims: []string{"big<-b/boss"},
		},
		"reclaim takes the victim that throws away less device time": {
			sc: twoTenants().run("a", "wide", "low", "n1", 4, 40).runGang("a", "narrow", "low", "n2", 4, 1, 15).
				queue(gpuJob("b", "boss", "standard", 4)),
			victims: []string{"narrow<-b/boss"},
		},
		"among victims that lose at most 30m the lowest class goes first": {
			sc: twoTenants().run("a", "std", "standard", "n1", 4, 0).run("a", "be", "best-effort", "n2", 4, 25).
				queue(gpuJob("b", "boss", "standard", 4)),
			victims: []string{"be<-b/boss"},
		},
		"reclaim takes a fresh checkpoint of any class before a lower class that would lose more than 30m": {
			sc: twoTenants().run("a", "std", "standard", "n1", 4, 0).run("a", "be", "best-effort", "n2", 4, 55).
				queue(gpuJob("b", "boss", "standard", 4)),
			victims: []string{"std<-b/boss"},
			reason:  "preempting a/std (reclaim)",
		},
		"reclaim takes a victim that loses more when the fresh ones do not make room": {
			sc: twoTenants().run("a", "std", "standard", "n1", 2, 5).run("a", "lo", "low", "n1", 2, 50).
				run("a", "be", "best-effort", "n2", 4, 55).queue(gpuJob("b", "boss", "standard", 4)),
			victims: []string{"be<-b/boss"},
		},
		"with reclaim checkpointed a borrower that would lose more than 30m keeps its GPUs": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "low", "n2", 4, 50).
				queue(gpuJob("b", "boss", "standard", 4)),
			cfg: func(c *Config) { c.Reclaim = ReclaimCheckpointed },
			reason: `free capacity of node pool gpu (2 nodes); reclaim = "checkpointed": waits for borrowers to checkpoint or end, at most until ` +
				t0.Add(10*time.Second+ReclaimMaxWait).UTC().Format(time.RFC3339) + ` (2 of their jobs would lose more than 30m0s of work)`,
		},
		"with reclaim checkpointed a claim that waited ReclaimMaxWait takes the borrower anyway": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "low", "n2", 4, 50).
				queue(mkJob("b", "boss").Class("standard").Pool("gpu").Device("nvidia/gpu", 4).QueuedAt(t0.Add(-2*ReclaimMaxWait)).Build()).
				claimedSince("b/boss", t0.Add(10*time.Second-ReclaimMaxWait)),
			cfg:     func(c *Config) { c.Reclaim = ReclaimCheckpointed },
			victims: []string{"a1<-b/boss"},
			reason:  "preempting a/a1 (reclaim)",
		},
		"with reclaim checkpointed a claim waits just short of ReclaimMaxWait": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "low", "n2", 4, 50).
				queue(mkJob("b", "boss").Class("standard").Pool("gpu").Device("nvidia/gpu", 4).QueuedAt(t0.Add(-2*ReclaimMaxWait)).Build()).
				claimedSince("b/boss", t0.Add(-ReclaimMaxWait+time.Minute)),
			cfg:    func(c *Config) { c.Reclaim = ReclaimCheckpointed },
			reason: `reclaim = "checkpointed": waits for borrowers to checkpoint or end, at most until ` + t0.Add(time.Minute).UTC().Format(time.RFC3339),
		},
		"with reclaim checkpointed a job queued for ReclaimMaxWait that has only now become a claim waits": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "low", "n2", 4, 50).
				queue(mkJob("b", "boss").Class("standard").Pool("gpu").Device("nvidia/gpu", 4).QueuedAt(t0.Add(-2 * ReclaimMaxWait)).Build()),
			cfg:    func(c *Config) { c.Reclaim = ReclaimCheckpointed },
			reason: `reclaim = "checkpointed": waits for borrowers to checkpoint or end, at most until ` + t0.Add(10*time.Second+ReclaimMaxWait).UTC().Format(time.RFC3339),
		},
		"with reclaim checkpointed a fresh checkpoint is still taken": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "standard", "n2", 4, 10).
				queue(gpuJob("b", "boss", "standard", 4)),
			cfg:     func(c *Config) { c.Reclaim = ReclaimCheckpointed },
			victims: []string{"a2<-b/boss"},
			reason:  "preempting a/a2 (reclaim)",
		},
		"with reclaim checkpointed a borrower that saves on stop is taken whatever its last checkpoint": {
			sc: saving(twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "low", "n2", 4, 50).
				queue(gpuJob("b", "boss", "standard", 4)), "a2"),
			cfg:     func(c *Config) { c.Reclaim = ReclaimCheckpointed },
			victims: []string{"a2<-b/boss"},
		},
		"without reclaim_max_loss a reclaim takes the fewest victims, though they lose more": {
			sc: twoTenants().run("a", "big", "low", "n1", 4, 55).run("a", "s1", "low", "n2", 2, 40).run("a", "s2", "low", "n2", 2, 50).
				queue(gpuJob("b", "boss", "standard", 4)),
			victims: []string{"big<-b/boss"},
		},
		"with reclaim_max_loss a borrower that would throw away more is spared for ones within the bound": {
			sc: twoTenants().run("a", "big", "low", "n1", 4, 55).run("a", "s1", "low", "n2", 2, 40).run("a", "s2", "low", "n2", 2, 50).
				queue(gpuJob("b", "boss", "standard", 4)),
			cfg:     func(c *Config) { c.ReclaimMaxLoss = 45 * time.Minute },
			victims: []string{"s1<-b/boss", "s2<-b/boss"},
			reason:  "preempting a/s1, a/s2 (reclaim)",
		},
		"with reclaim_max_loss a claim waits when every borrower would throw away more": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "low", "n2", 4, 50).
				queue(gpuJob("b", "boss", "standard", 4)),
			cfg: func(c *Config) { c.ReclaimMaxLoss = 30 * time.Minute },
			reason: `free capacity of node pool gpu (2 nodes); reclaim_max_loss = "30m0s": waits for borrowers to checkpoint or end, at most until ` +
				t0.Add(10*time.Second+ReclaimMaxWait).UTC().Format(time.RFC3339) + ` (2 of their jobs would throw away more than 2 device-hours, 30m0s for each of the 4 devices it claims)`,
		},
		"with reclaim_max_loss a claim that waited ReclaimMaxWait takes the borrower anyway": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "low", "n2", 4, 50).
				queue(mkJob("b", "boss").Class("standard").Pool("gpu").Device("nvidia/gpu", 4).QueuedAt(t0.Add(-ReclaimMaxWait)).Build()).
				claimedSince("b/boss", t0.Add(-ReclaimMaxWait)),
			cfg:     func(c *Config) { c.ReclaimMaxLoss = 30 * time.Minute },
			victims: []string{"a1<-b/boss"},
		},
		"with reclaim_max_loss a claim's clock restarts when it is requeued": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "low", "n2", 4, 50).
				queue(func() *Job {
					j := mkJob("b", "boss").Class("standard").Pool("gpu").Device("nvidia/gpu", 4).QueuedAt(t0.Add(-2 * ReclaimMaxWait)).Build()
					j.Requeues, j.RequeuedAt = 1, t0.Add(-time.Hour)
					return j
				}()).claimedSince("b/boss", t0.Add(-2*ReclaimMaxWait)),
			cfg:    func(c *Config) { c.ReclaimMaxLoss = 30 * time.Minute },
			reason: `reclaim_max_loss = "30m0s": waits for borrowers`,
		},
		"the largest reclaim_max_loss bounds nothing (no overflow)": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 45).run("a", "a2", "low", "n2", 4, 50).
				queue(gpuJob("b", "boss", "standard", 4)),
			cfg:     func(c *Config) { c.ReclaimMaxLoss = time.Duration(math.MaxInt64) },
			victims: []string{"a1<-b/boss"},
		},
		"reclaim_max_loss never spares a fresh checkpoint": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 25).run("a", "a2", "low", "n2", 4, 50).
				queue(gpuJob("b", "boss", "standard", 4)),
			cfg:     func(c *Config) { c.ReclaimMaxLoss = time.Minute },
			victims: []string{"a1<-b/boss"},
		},
		"a tenant that would borrow does not reclaim": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 1).run("a", "a2", "low", "n2", 2, 1).run("b", "b0", "low", "n2", 2, 1).
				queue(gpuJob("b", "boss", "standard", 4)),
			reason: "quota: needs 4 gpu; tenant b uses 2 of quota 4",
		},
		"no victims from a tenant within its nominal quota": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 1).run("b", "b1", "low", "n2", 4, 1).
				queue(gpuJob("b", "more", "low", 2)),
			reason: "quota:",
		},
		"production is never a victim": {
			sc: func() *scene {
				sc := twoTenants()
				sc.tenants[0].Classes = []string{"production", "low"}
				return sc.run("a", "p1", "production", "n1", 4, 1).run("a", "p2", "production", "n2", 4, 1).
					queue(gpuJob("b", "boss", "standard", 4))
			}(),
			reason: "fit:",
		},
		"a non-preemptible class is respected": {
			sc: twoTenants().run("a", "a1", "low", "n1", 4, 1).run("a", "a2", "low", "n2", 4, 1).queue(gpuJob("b", "boss", "standard", 4)),
			cfg: func(c *Config) {
				c.Classes["low"] = Class{Priority: 30}
			},
			reason: "fit:",
		},
		"within a tenant a higher class preempts a lower one at the limit": {
			sc: twoTenants().run("a", "lo", "low", "n1", 4, 3).run("a", "std", "standard", "n2", 4, 1).
				queue(gpuJob("a", "urgent", "high", 4)),
			victims: []string{"lo<-a/urgent"},
			reason:  "(priority)",
		},
		"within a tenant a lower class that would lose more than ClassLostWork keeps its GPUs": {
			sc: twoTenants().run("a", "lo", "low", "n1", 4, 6).run("a", "std", "standard", "n2", 4, 1).
				queue(gpuJob("a", "next", "standard", 4)),
			reason: "limit:",
		},
		"within a tenant a lower class that saves on stop goes though it would lose 30m": {
			sc: func() *scene {
				sc := twoTenants().run("a", "lo", "low", "n1", 4, 30).run("a", "std", "standard", "n2", 4, 1).
					queue(gpuJob("a", "next", "standard", 4))
				sc.jobs[0].Groups[0].SavesOnStop = true
				return sc
			}(),
			victims: []string{"lo<-a/next"},
			reason:  "(priority)",
		},
		"within a tenant a gang's allocations lose ClassLostWork together: taken": {
			sc: twoTenants().runGang("a", "lo", "low", "n1", 2, 2, 2).run("a", "hi", "high", "n2", 4, 1).
				queue(gpuJob("a", "urgent", "high", 4)),
			victims: []string{"lo<-a/urgent"},
			reason:  "(priority)",
		},
		"within a tenant a gang whose allocations together lose more keeps its GPUs": {
			sc: twoTenants().runGang("a", "lo", "low", "n1", 2, 2, 3).run("a", "hi", "high", "n2", 4, 1).
				queue(gpuJob("a", "urgent", "high", 4)),
			reason: "limit:",
		},
		"within a tenant an outranked job that loses little goes, not the lowest class that would lose much": {
			sc: twoTenants().run("a", "long", "best-effort", "n1", 4, 59).run("a", "fresh", "low", "n2", 4, 5).
				queue(gpuJob("a", "urgent", "high", 4)),
			victims: []string{"fresh<-a/urgent"},
			reason:  "preempting a/fresh (priority)",
		},
		"within a tenant an equal class does not preempt": {
			sc: twoTenants().run("a", "s1", "standard", "n1", 4, 3).run("a", "s2", "standard", "n2", 4, 1).
				queue(gpuJob("a", "next", "standard", 4)),
			reason: "limit:",
		},
		"a job never preempts the job that preempted it": {
			sc: func() *scene {
				sc := twoTenants().run("a", "a1", "low", "n1", 4, 1).run("a", "a2", "low", "n2", 4, 9)
				j := gpuJob("b", "back", "standard", 4)
				j.PreemptedBy = "a/a1"
				return sc.queue(j)
			}(),
			victims: []string{"a2<-b/back"},
		},
		"a reclaiming preemptor goes first in the queue": {
			sc: func() *scene {
				sc := twoTenants().run("a", "a1", "low", "n1", 4, 1)
				sc.jobs[0].State, sc.jobs[0].PreemptedBy, sc.jobs[0].RequeuedAt = Queued, "b/boss", t0
				sc.allocs, sc.nodes = nil, sc.nodes[:1] // a1 stopped: its GPUs are free
				return sc.queue(gpuJob("a", "borrower", "high", 4)).queue(gpuJob("b", "boss", "low", 4))
			}(),
			reason: "admitted",
		},
		"preemption can be disabled": {
			sc:     twoTenants().run("a", "a1", "low", "n1", 4, 1).run("a", "a2", "low", "n2", 4, 1).queue(gpuJob("b", "boss", "standard", 4)),
			cfg:    func(c *Config) { c.DisablePreemption = true },
			reason: "fit:",
		},
		"jobs already stopping make room: nothing more is preempted": {
			sc: func() *scene {
				sc := twoTenants().run("a", "a1", "low", "n1", 4, 1).run("a", "a2", "low", "n2", 4, 1)
				// Held by the last cycle for boss, its allocation still
				// stopping; it backs off meanwhile.
				sc.jobs[0].State, sc.jobs[0].PreemptedBy, sc.jobs[0].RequeuedAt, sc.jobs[0].Requeues = Queued, "b/boss", t0, 1
				return sc.queue(gpuJob("b", "boss", "standard", 4))
			}(),
			cfg:    func(c *Config) { c.BackoffBase = time.Minute },
			reason: "waiting for stopping jobs",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			s := tc.sc.snap()
			p := Decide(cfg, s)
			must.Eq(t, tc.victims, victimsOf(p))
			preemptor := s.Jobs[len(s.Jobs)-1]
			if tc.reason != "" {
				must.StrContains(t, findVerdict(t, p, preemptor.ID).Reason, tc.reason)
			}
			for _, d := range p.Decisions {
				if d.JobID != preemptor.ID || tc.reason != "admitted" {
					must.NotEq(t, Admit, d.Action, must.Sprintf("nothing else is admitted: %v", d))
				}
			}
		})
	}
}

// A priority preemption's reason states the bound its victims were held
// to: ClassLostWork, or saving a checkpoint on stop where a victim does
// (it may be FairLostWork past its last periodic checkpoint).
func TestPriorityReasonSaysTheBound(t *testing.T) {
	cases := map[string]struct {
		saves     bool
		lost      int
		want, not string
	}{
		"victim that loses little": {lost: 3, want: "(victims lose ≤ 5m0s of work)", not: "save a checkpoint"},
		"victim that saves on stop": {saves: true, lost: 25,
			want: "(victims save a checkpoint when stopped or lose ≤ 5m0s of work)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc := twoTenants().run("a", "lo", "low", "n1", 4, tc.lost).run("a", "std", "standard", "n2", 4, 1).
				queue(gpuJob("a", "next", "standard", 4))
			sc.jobs[0].Groups[0].SavesOnStop = tc.saves
			pr := onlyPreemption(t, Decide(testConfig(), sc.snap()), CausePriority)
			must.StrContains(t, pr.Reason, "class standard of tenant a outranks the victims' class "+tc.want)
			if tc.not != "" {
				must.StrNotContains(t, pr.Reason, tc.not)
			}
		})
	}
}

func TestReclaimChoosesTheTenantWithTheLargestShareFirst(t *testing.T) {
	// a and c both borrow; c has the larger weighted share, so with equal
	// class and lost work it gives back first.
	sc := &scene{tenants: []*Tenant{
		mkTenant("a").Quota("gpu", 2).Build(),
		mkTenant("b").Quota("gpu", 4).Build(),
		mkTenant("c").Quota("gpu", 2).Weight(0.5).Build(),
	}, nodes: []*Node{gpuNode("n1", 4), gpuNode("n2", 4)}}
	sc.run("a", "a1", "low", "n1", 2, 5).run("a", "a2", "low", "n1", 2, 5).
		run("c", "c1", "low", "n2", 2, 5).run("c", "c2", "low", "n2", 2, 5).queue(gpuJob("b", "boss", "standard", 2))
	p := Decide(testConfig(), sc.snap())
	must.SliceLen(t, 1, victimsOf(p))
	must.StrContains(t, victimsOf(p)[0], "c")
}

func TestPreemptionRecordsLostWorkAndReason(t *testing.T) {
	sc := twoTenants().run("a", "a1", "low", "n1", 4, 7).run("a", "a2", "low", "n2", 4, 20)
	never, na := running("a", "fresh", "low", "n2", 0, t0.Add(10*time.Second).Add(-3*time.Minute), time.Time{})
	sc.jobs, sc.allocs = append(sc.jobs, never), append(sc.allocs, na)
	sc.queue(gpuJob("b", "boss", "standard", 4))
	p := Decide(testConfig(), sc.snap())
	must.SliceLen(t, 1, p.Preemptions)
	pr := p.Preemptions[0]
	must.Eq(t, CauseReclaim, pr.Cause)
	must.Eq(t, []Victim{{Namespace: "a", JobID: "a1", Class: "low", LostWork: 7 * time.Minute}}, pr.Victims)
	d, ok := p.Decision("a", "a1")
	must.True(t, ok)
	must.Eq(t, Requeue, d.Action)
	must.Eq(t, "b/boss", d.Preemptor)
	must.Eq(t, t0, d.QueuedAt, must.Sprint("a victim keeps its original queued-at"))
	must.StrContains(t, d.Reason, "preempted by b/boss (reclaim)")
	must.Eq(t, 3*time.Minute, lostWork(na, t0.Add(10*time.Second)), must.Sprint("no checkpoint: all work since start is lost"))
}

// A victim's reason says the work its job loses and, for a job of several
// GPUs, the device time thrown away; Decision.LostWork keeps the API's
// figure, summed over the allocations.
func TestVictimReasonSaysWorkAndDeviceTime(t *testing.T) {
	sc := twoTenants().runGang("a", "gang", "low", "n1", 2, 2, 45).run("a", "a2", "low", "n2", 4, 50).
		queue(gpuJob("b", "boss", "standard", 4))
	p := Decide(testConfig(), sc.snap())
	must.Eq(t, []string{"gang<-b/boss"}, victimsOf(p), must.Sprint("3 device-hours lost before a2's 3.3"))
	d, ok := p.Decision("a", "gang")
	must.True(t, ok)
	must.StrContains(t, d.Reason, "; loses 45m0s of work since its last checkpoint (3.0 device-hours)")
	must.Eq(t, 90*time.Minute, d.LostWork)
}

func TestBackoff(t *testing.T) {
	cfg := testConfig()
	cfg.BackoffBase, cfg.BackoffCap = 10*time.Second, 35*time.Second
	now := t0.Add(10 * time.Second)
	cases := map[string]struct {
		requeues int
		ago      time.Duration
		admitted bool
	}{
		"never requeued":                     {0, 0, true},
		"first requeue waits the base":       {1, 9 * time.Second, false},
		"first requeue after the base":       {1, 11 * time.Second, true},
		"third requeue waits 4x the base":    {3, 39 * time.Second, true},
		"third requeue within 4x the base":   {2, 19 * time.Second, false},
		"many requeues wait at most the cap": {40, 36 * time.Second, true},
		"many requeues within the cap":       {40, 34 * time.Second, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := gpuJob("a", "j", "standard", 1)
			j.Requeues, j.RequeuedAt = tc.requeues, now.Add(-tc.ago)
			p := Decide(cfg, twoTenants().queue(j).snap())
			_, ok := p.Decision("a", "j")
			must.Eq(t, tc.admitted, ok)
			if !tc.admitted {
				must.StrContains(t, findVerdict(t, p, "j").Reason, "backoff: requeued")
			}
		})
	}
}

func TestGangTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.GangTimeout = time.Minute
	now := t0.Add(10 * time.Second)
	gang := func(admittedAgo time.Duration, started int, noGang bool) *Snapshot {
		j := mkJob("a", "gang").State(Admitted).Pool("gpu").Count(3).Device("nvidia/gpu", 1).Build()
		j.AdmittedAt, j.NoGang = now.Add(-admittedAgo), noGang
		var allocs []*Alloc
		for i := 0; i < 2; i++ {
			a := alloc("a", "gang", "g", "n1", 100, 128, map[string]int{h200: 1})
			a.ID, a.Started = fmt.Sprintf("x%d", i), i < started
			allocs = append(allocs, a)
		}
		return snap(twoTenants().tenants, []*Node{gpuNode("n1", 2)}, allocs, j)
	}
	cases := map[string]struct {
		s       *Snapshot
		requeue bool
	}{
		"partial placement past the timeout is requeued": {gang(2*time.Minute, 2, false), true},
		"within the timeout it waits":                    {gang(30*time.Second, 2, false), false},
		"a job that is not a gang is left alone":         {gang(2*time.Minute, 0, true), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Decide(cfg, tc.s)
			d, ok := p.Decision("a", "gang")
			must.Eq(t, tc.requeue, ok)
			if tc.requeue {
				must.Eq(t, Requeue, d.Action)
				must.Eq(t, CauseGangTimeout, d.Cause)
				must.StrContains(t, d.Reason, "gang timeout: only 2 of 3 allocations started 2m0s after admission")
				must.Eq(t, int64(0), p.Tenants[0].Usage["gpu"], must.Sprint("a requeued job's usage is released"))
			}
		})
	}
	t.Run("all allocations started", func(t *testing.T) {
		j := mkJob("a", "gang").State(Admitted).Pool("gpu").Count(1).Device("nvidia/gpu", 1).Build()
		j.AdmittedAt = now.Add(-time.Hour)
		a := alloc("a", "gang", "g", "n1", 100, 128, map[string]int{h200: 1})
		a.Started = true
		_, ok := Decide(cfg, snap(twoTenants().tenants, []*Node{gpuNode("n1", 2)}, []*Alloc{a}, j)).Decision("a", "gang")
		must.False(t, ok)
	})
}

// A preemptor waiting for its victims to stop keeps its claim: its
// tenant's next job does not find the tenant below its nominal quota and
// reclaim again, as it would every cycle until the victims have stopped
// (seen on the real stack: three reclaims by one tenant within 0.7 s,
// then reclaims back).
func TestWaitingPreemptorKeepsItsClaim(t *testing.T) {
	// a, b and c have 4 GPUs of nominal quota each on three 4-GPU nodes;
	// c lends its 4 to a.
	sc := &scene{tenants: []*Tenant{
		mkTenant("a").Quota("gpu", 4).Build(), mkTenant("b").Quota("gpu", 4).Build(), mkTenant("c").Quota("gpu", 4).Build(),
	}, nodes: []*Node{gpuNode("n1", 4), gpuNode("n2", 4), gpuNode("n3", 4)}}
	sc.run("a", "a1", "low", "n1", 4, 1).run("a", "a2", "low", "n2", 4, 1).run("a", "a3", "low", "n3", 4, 1)
	sc.stoppingFor(0, "b/boss") // the last cycle requeued a1 for b/boss
	sc.queue(gpuJob("b", "boss", "standard", 4)).queue(gpuJob("b", "next", "standard", 4))
	p := Decide(testConfig(), sc.snap())
	must.SliceEmpty(t, victimsOf(p), must.Sprint("b's nominal 4 GPUs are boss's: next would borrow, so it reclaims nothing from a"))
	must.StrContains(t, findVerdict(t, p, "boss").Reason, "waiting for stopping jobs")
	must.StrNotContains(t, findVerdict(t, p, "next").Reason, "preempting")
}

// The capacity a waiting preemptor's victims free is its own: another
// job does not preempt on the strength of it (it would preempt for
// nothing and wait behind the preemptor).
func TestOthersDoNotCountAWaitingPreemptorsCapacity(t *testing.T) {
	sc := &scene{tenants: []*Tenant{
		mkTenant("a").Quota("gpu", 4).Build(), mkTenant("b").Quota("gpu", 4).Build(), mkTenant("c").Quota("gpu", 4).Build(),
	}, nodes: []*Node{gpuNode("n1", 4), gpuNode("n2", 4)}}
	sc.run("b", "b1", "low", "n1", 4, 1).run("c", "clow", "low", "n2", 2, 1).run("b", "bx", "standard", "n2", 2, 1)
	sc.stoppingFor(0, "a/boss") // the last cycle requeued b1 for a/boss
	sc.queue(gpuJob("a", "boss", "standard", 4)).queue(gpuJob("c", "hi", "high", 4))
	p := Decide(testConfig(), sc.snap())
	must.SliceEmpty(t, victimsOf(p), must.Sprint("n1 is boss's; clow's 2 GPUs alone cannot make room for hi"))
	must.StrContains(t, findVerdict(t, p, "boss").Reason, "waiting for stopping jobs")
}

// The free capacity a preemptor's placement counts on beside its
// victims' is its own too: a later job of the walk does not take it (the
// preemptor, its victims stopped, would not fit in the next cycle), nor
// while the preemptor waits for its victims to stop (its victim lo,
// queued again, took it). a/hi needs n1's 4 free GPUs and lo's 4; a/small
// and lo would fit the free 4.
func TestOthersDoNotTakeAPreemptorsFreeCapacity(t *testing.T) {
	for _, stopping := range []bool{false, true} {
		sc := &scene{tenants: []*Tenant{mkTenant("a").Quota("gpu", 16).Build()}, nodes: []*Node{gpuNode("n1", 8)}}
		sc.run("a", "lo", "low", "n1", 4, 1)
		if stopping {
			sc.stoppingFor(0, "a/hi") // the last cycle requeued lo for a/hi
		}
		sc.queue(gpuJob("a", "hi", "high", 8)).queue(gpuJob("a", "small", "low", 2))
		p := Decide(testConfig(), sc.snap())
		if stopping {
			must.StrContains(t, findVerdict(t, p, "hi").Reason, "waiting for stopping jobs")
			must.SliceEmpty(t, p.Decisions, must.Sprintf("n1's free GPUs are hi's: %v", p.Decisions))
			continue
		}
		must.Eq(t, []string{"lo<-a/hi"}, victimsOf(p))
		v := findVerdict(t, p, "small")
		must.Eq(t, Queued, v.State, must.Sprint(v.Reason))
		must.StrContains(t, v.Reason, "fit")
	}
}

// Under the entitlement rule a reclaim takes back what borrowers borrow
// before what their tenants were promised, where that throws away no
// more work for good: r's 8-GPU job (5 minutes past its checkpoint)
// borrows 2 GPUs past its nominal 6 and b's 1-GPU jobs borrow past its
// nominal 4. p, within its nominal, needs 4 GPUs on one node: the fewest
// victims are r's one job (r falls 6 GPUs below its nominal); two of b's
// leave b at its nominal. Where b's jobs lose 25 minutes each and do not
// save when stopped, two of them throw away 50 GPU-minutes against r's
// 40, and r's job is taken; where they save (the ckpt driver), they
// throw away nothing. The gap rule keeps taking the fewest.
func TestReclaimTakesBorrowedCapacityBeforeNominalUnderEntitlement(t *testing.T) {
	// small: b's 1-GPU jobs on n2, each lost minutes past its checkpoint;
	// the rest of n2 stays free. r's job is gangLost minutes past its.
	scene := func(small, gangLost, lost int, saves bool) *scene {
		sc := &scene{tenants: []*Tenant{mkTenant("r").Quota("gpu", 6).Limit("gpu", 16).Build(),
			mkTenant("b").Quota("gpu", 4).Limit("gpu", 16).Build(), mkTenant("p").Quota("gpu", 6).Build()},
			nodes: []*Node{gpuNode("n1", 8), gpuNode("n2", 8)}}
		sc.run("r", "gang", "standard", "n1", 8, gangLost)
		for i := 0; i < small; i++ {
			sc.run("b", fmt.Sprintf("s%d", i), "standard", "n2", 1, lost)
			sc.jobs[len(sc.jobs)-1].Groups[0].SavesOnStop = saves
		}
		return sc.queue(gpuJob("p", "boss", "standard", 4))
	}
	two := []string{"s0<-p/boss", "s1<-p/boss"}
	four := []string{"s0<-p/boss", "s1<-p/boss", "s2<-p/boss", "s3<-p/boss"}
	gang := []string{"gang<-p/boss"}
	cases := map[string]struct {
		rule                  string
		small, gangLost, lost int
		saves                 bool
		victims               []string
	}{
		"entitlement: two of b's, b keeps its nominal": {FairRuleEntitlement, 6, 5, 5, false, two},
		"gap: the fewest, r's whole job":               {FairRuleGap, 6, 5, 5, false, gang},
		"entitlement: b's would throw away more work":  {FairRuleEntitlement, 6, 5, 25, false, gang},
		"entitlement: b's save when stopped":           {FairRuleEntitlement, 6, 5, 25, true, two},
		// Nine candidates: the greedy search, not the exhaustive one. r's
		// job, just checkpointed, is the cheapest victim and comes first.
		"gap, greedy: the cheapest first":                {FairRuleGap, 8, 0, 5, true, gang},
		"entitlement, greedy: b's would throw away more": {FairRuleEntitlement, 8, 0, 5, false, gang},
		"entitlement, greedy: b's save when stopped":     {FairRuleEntitlement, 8, 0, 5, true, four},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.FairShareRule = tc.rule
			p := Decide(cfg, scene(tc.small, tc.gangLost, tc.lost, tc.saves).snap())
			must.Eq(t, tc.victims, victimsOf(p))
		})
	}
}

func TestNominalTakenSumsWhatEachTenantsVictimsTake(t *testing.T) {
	co := &cohort{governed: map[string]bool{"gpu": true}}
	acct := func(ns string, nominal, usage int64) *account {
		return &account{t: mkTenant(ns).Quota("gpu", nominal).Build(), usage: quota.Vector{"gpu": usage}, cohort: co}
	}
	// a borrows 2 of nominal 4; b uses its nominal 6; c uses 3 of 8; p
	// preempts.
	a, b, c, p := acct("a", 4, 6), acct("b", 6, 6), acct("c", 8, 3), acct("p", 8, 2)
	v := func(of *account, gpus, cpu int64) *victim {
		return &victim{acct: of, use: quota.Vector{"gpu": gpus, quota.CPU: cpu}}
	}
	cases := map[string]struct {
		set  []*victim
		want int64
	}{
		"none":                                   {nil, 0},
		"a keeps its nominal":                    {[]*victim{v(a, 1, 0), v(a, 1, 0)}, 0},
		"a's three together take one":            {[]*victim{v(a, 1, 0), v(a, 1, 0), v(a, 1, 0)}, 1},
		"at most what the victims hold":          {[]*victim{v(c, 2, 0)}, 2},
		"each tenant on its own":                 {[]*victim{v(a, 3, 0), v(b, 1, 0), v(a, 1, 0)}, 3},
		"the preemptor's own jobs are no taking": {[]*victim{v(p, 2, 0), v(a, 2, 0)}, 0},
		"resources the job does not ask for":     {[]*victim{v(b, 0, 900)}, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &trial{acct: p, devs: map[string]bool{"gpu": true}}
			must.Eq(t, tc.want, s.nominalTaken(tc.set))
		})
	}
}
