package engine

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// threeTenants: a, b and c, nominal 8 GPUs each (no limits), on three
// 8-GPU nodes: a tenant above its nominal borrows another's.
func threeTenants() *scene {
	return &scene{tenants: []*Tenant{
		mkTenant("a").Quota("gpu", 8).Build(),
		mkTenant("b").Quota("gpu", 8).Build(),
		mkTenant("c").Quota("gpu", 8).Build(),
	}, nodes: []*Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8)}}
}

// fairBusy: a holds 8 (share 1), b 14 (1.75), c 2; a asks for 2 more:
// 1.25 after, b 1.5 after giving 2 back. b1..b4 are the classes of b's
// jobs, lost2..lost4 the minutes b2..b4 ran since their last checkpoint.
func fairBusy(b1, b2, b3, b4 string, lost2, lost3, lost4 int) *scene {
	return threeTenants().run("a", "a1", "standard", "n1", 6, 1).run("c", "c1", "standard", "n1", 2, 1).
		run("b", "b1", b1, "n2", 8, 1).
		run("a", "a2", "standard", "n3", 2, 1).run("b", "b2", b2, "n3", 2, lost2).
		run("b", "b3", b3, "n3", 2, lost3).run("b", "b4", b4, "n3", 2, lost4).
		queue(gpuJob("a", "fair", "standard", 2))
}

// TestFairSharePreemption: a borrowing tenant whose share after its job
// stays FairShareGap below a bigger borrower's (after losing its victims)
// takes capacity from it, choosing victims with fresh checkpoints; no
// preemption within the gap, of a victim that would lose much work, of a
// higher class, or that would turn the order around.
func TestFairSharePreemption(t *testing.T) {
	busy := fairBusy
	cases := map[string]struct {
		sc      *scene
		victims []string
		reason  string
	}{
		"the bigger borrower gives back a job with a fresh checkpoint": {
			sc:      busy("standard", "standard", "standard", "standard", 60, 2, 40),
			victims: []string{"b3<-a/fair"},
			reason:  "preempting b/b3 (fair-share)",
		},
		"every victim would lose much work: none": {
			sc: busy("standard", "standard", "standard", "standard", 60, 45, 40),
		},
		"a higher class is no fairness victim": {
			sc: busy("standard", "high", "high", "high", 1, 1, 1),
		},
		"within the hysteresis: none": {
			// b holds 11 (1.375): 1.125 after giving 2 back, below a's 1.25 + gap.
			sc: threeTenants().run("a", "a1", "standard", "n1", 8, 1).run("b", "b1", "standard", "n2", 8, 1).
				run("b", "b2", "standard", "n3", 1, 1).run("b", "b3", "standard", "n3", 2, 1).run("c", "c1", "standard", "n3", 5, 1).
				queue(gpuJob("a", "fair", "standard", 2)),
		},
		"a tenant within its nominal reclaims as before": {
			sc: threeTenants().run("a", "a1", "standard", "n1", 2, 1).run("c", "c1", "standard", "n1", 6, 1).
				run("b", "b1", "standard", "n2", 8, 1).
				run("b", "b2", "standard", "n3", 2, 60).run("b", "b3", "standard", "n3", 2, 50).
				run("b", "b4", "standard", "n3", 4, 40).
				queue(gpuJob("a", "own", "standard", 2)),
			victims: []string{"b1<-a/own"}, // the least lost work, as reclaim chooses
			reason:  "(reclaim)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := Decide(testConfig(), tc.sc.snap())
			must.Eq(t, tc.victims, victimsOf(p))
			for _, j := range tc.sc.jobs {
				if j.State == Queued && tc.reason != "" {
					must.StrContains(t, p.Verdicts[j.Key()].Reason, tc.reason)
				}
			}
		})
	}
}

// TestFairShareSettings: Config.FairShareGap and Config.FairClasses
// (governor config fair_share_gap, fair_share_classes) change whom a
// fairness preemption may take, and nothing else: a smaller gap takes
// from a tenant the default gap spares, FairClassesAny takes a higher
// class the default spares, and neither lets a tenant take from one
// that borrows less.
func TestFairShareSettings(t *testing.T) {
	// Quota 16 each on six 8-GPU nodes (a share step of 1/16): a holds
	// 16 (share 1) and asks for 1 more (17/16 = 1.0625 after); b holds
	// bHeld and gives back a 1-GPU job; c holds the rest, below its
	// nominal, lending what b borrows.
	scene := func(bHeld int, victimClass string) *scene {
		sc := sixNodes()
		// b's jobs but "one" would lose 50 minutes: no fairness victims.
		sc.run("a", "a1", "standard", "n1", 8, 1).run("a", "a2", "standard", "n2", 8, 1).
			run("b", "b1", "standard", "n3", 8, 50).run("b", "b2", "standard", "n4", 8, 50).
			run("b", "b3", "standard", "n5", bHeld-17, 50).run("b", "one", victimClass, "n5", 1, 1).
			run("c", "c1", "standard", "n5", 8-(bHeld-17)-1, 1).run("c", "c2", "standard", "n6", 8, 1)
		return sc.queue(gpuJob("a", "fair", "standard", 1))
	}
	cases := map[string]struct {
		bHeld   int
		class   string
		gap     float64
		classes string
		victims []string
		reason  string
	}{
		// b: 20 held, 19/16 = 1.1875 after, ≥ 1.0625 + 0.1.
		"default gap, a bigger borrower gives back": {bHeld: 20, class: "standard", victims: []string{"one<-a/fair"}, reason: "≥ 0.10 below theirs"},
		// b: 19 held, 18/16 = 1.125 after: within 0.1, beyond 0.02.
		"default gap spares a close borrower":  {bHeld: 19, class: "standard"},
		"a smaller gap takes from it":          {bHeld: 19, class: "standard", gap: 0.02, victims: []string{"one<-a/fair"}, reason: "≥ 0.02 below theirs"},
		"a smaller gap still spares an equal":  {bHeld: 18, class: "standard", gap: 0.02},
		"default classes spare a higher class": {bHeld: 20, class: "high"},
		"any class takes it":                   {bHeld: 20, class: "high", classes: FairClassesAny, victims: []string{"one<-a/fair"}},
		"any class keeps the gap":              {bHeld: 19, class: "high", classes: FairClassesAny},
		"not-above is the default":             {bHeld: 20, class: "high", classes: FairClassesNotAbove},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.FairShareGap, cfg.FairClasses = tc.gap, tc.classes
			p := Decide(cfg, scene(tc.bHeld, tc.class).snap())
			must.Eq(t, tc.victims, victimsOf(p), must.Sprint(p.Verdicts["a/fair"].Reason))
			if tc.reason != "" {
				must.Len(t, 1, p.Preemptions)
				must.StrContains(t, p.Preemptions[0].Reason, tc.reason)
			}
		})
	}
}

// TestFairSharePreemptionNoLoop: after a fairness preemption the victim's
// tenant still has the bigger share, so the next cycle, with the victim
// requeued and the preemptor running, preempts nothing back.
func TestFairSharePreemptionNoLoop(t *testing.T) {
	after := threeTenants().run("a", "a1", "standard", "n1", 6, 1).run("c", "c1", "standard", "n1", 2, 1).
		run("b", "b1", "standard", "n2", 8, 1).
		run("a", "a2", "standard", "n3", 2, 1).run("b", "b2", "standard", "n3", 2, 1).
		run("a", "fair", "standard", "n3", 2, 1).run("b", "b4", "standard", "n3", 2, 1)
	b3 := gpuJob("b", "b3", "standard", 2)
	b3.PreemptedBy, b3.Requeues, b3.RequeuedAt = "a/fair", 1, t0.Add(-time.Hour)
	after.queue(b3)
	p := Decide(testConfig(), after.snap())
	must.SliceEmpty(t, victimsOf(p))
	must.Eq(t, Queued, p.Verdicts["b/b3"].State)
}

// TestPropertyFairSharePreemptionNoPingPong: over many cycles of random
// arrivals, completions and preemptions, no victim of a fairness
// preemption loses more than FairLostWork, no job is preempted by one it
// preempted, and two tenants never take capacity from each other back
// and forth: once a preempts b for fairness, b does not preempt a for
// fairness within the next minute (the hysteresis keeps b's share above
// a's; jobs run 30 s to 7 minutes and checkpoint every 2, fairness victims
// must have run 5).
func TestPropertyFairSharePreemptionNoPingPong(t *testing.T) {
	settings := map[string]struct {
		gap     float64
		classes string
		rule    string
	}{
		"gap rule (the engine's zero value)": {},
		"gap 0.02 and any class (round 20)":  {gap: 0.02, classes: FairClassesAny},
		"entitlement rule (round 21)":        {rule: FairRuleEntitlement},
		"entitlement rule and any class":     {rule: FairRuleEntitlement, classes: FairClassesAny},
		"auto, half the jobs save on stop":   {rule: FairRuleAuto},
	}
	for name, set := range settings {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.BackoffBase, cfg.BackoffCap = 5*time.Second, time.Minute
			cfg.FairShareGap, cfg.FairClasses, cfg.FairShareRule = set.gap, set.classes, set.rule
			checkNoPingPong(t, cfg, func(j *Job) bool { return set.rule == FairRuleAuto && len(j.ID)%2 == 0 })
		})
	}
}

// checkNoPingPong runs TestPropertyFairSharePreemptionNoPingPong's
// cycles under cfg.
// saves tells which jobs save a checkpoint when stopped.
func checkNoPingPong(t *testing.T, cfg Config, saves func(*Job) bool) {
	fair, pingpong := 0, 0
	// The extra seeds failed a run over seeds 100000-100959 before the
	// take-back memory was carried from plan to plan (taken.go); 400385
	// and 400512 (gap 0.02, any class) one over 400000-401919 before the
	// gap rule kept the memory within a plan too (noteLost).
	for _, seed := range propertySeeds(120, 100441, 100691, 100905, 400385, 400512) {
		w, r := busyWorld(cfg, seed)
		s := w.s
		last := map[string]time.Time{} // "a>b" → latest fairness preemption of b's jobs by a's
		for cycle := 0; cycle < 90; cycle++ {
			w.tick(r, 30, 400)
			markSaving(s, saves)
			checkpointEvery(s, 2*time.Minute)
			p := w.step()
			for _, pr := range p.Preemptions {
				if pr.Cause != CauseFairShare {
					continue
				}
				fair++
				for _, v := range pr.Victims {
					must.LessEq(t, FairLostWork, v.LostWork, must.Sprintf("seed %d: %s", seed, v.JobID))
					if v.Namespace == pr.Namespace {
						continue
					}
					if at, ok := last[v.Namespace+">"+pr.Namespace]; ok && s.Now.Sub(at) <= time.Minute {
						pingpong++
						t.Logf("seed %d cycle %d: %s and %s take from each other after %s: %s", seed, cycle, pr.Namespace, v.Namespace, s.Now.Sub(at), pr.Reason)
						for _, q := range p.Preemptions {
							t.Logf("   %s/%s %s %v: %s", q.Namespace, q.JobID, q.Cause, q.Victims, q.Reason)
						}
					}
					last[pr.Namespace+">"+v.Namespace] = s.Now
				}
			}
		}
		must.SliceEmpty(t, w.preemptedBack(), must.Sprintf("seed %d", seed))
	}
	t.Logf("%d fairness preemptions, %d back and forth", fair, pingpong)
	must.Greater(t, 5, fair, must.Sprint("the scenario must actually preempt for fairness"))
	must.Zero(t, pingpong)
}

// TestPropertyFairRuleAuto: FairRuleAuto decides as FairRuleGap with the
// configured classes where no job saves a checkpoint when stopped and
// every running job would lose more than FairCheapLoss, and as
// FairRuleEntitlement with FairClassesAny where every job saves: every
// plan of 90 cycles of 50 random clusters is the same.
func TestPropertyFairRuleAuto(t *testing.T) {
	cases := map[string]struct {
		saves bool
		// lost, when set, is how long ago every running allocation
		// started (it never checkpointed).
		lost  time.Duration
		other Config
	}{
		"no job saves, every one would lose more: the gap rule": {lost: 10 * time.Minute, other: Config{FairShareRule: FairRuleGap}},
		"every job saves: entitlement, of any class":            {saves: true, other: Config{FairShareRule: FairRuleEntitlement, FairClasses: FairClassesAny}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			auto, other := testConfig(), testConfig()
			auto.FairShareRule = FairRuleAuto
			other.FairShareRule, other.FairClasses = c.other.FairShareRule, c.other.FairClasses
			fair := 0
			for seed := int64(0); seed < 50; seed++ {
				wa, ra := busyWorld(auto, seed)
				wo, ro := busyWorld(other, seed)
				for cycle := 0; cycle < 90; cycle++ {
					wa.tick(ra, 30, 400)
					wo.tick(ro, 30, 400)
					for _, w := range []*world{wa, wo} {
						markSaving(w.s, func(*Job) bool { return c.saves })
						if c.lost > 0 {
							startedBefore(w.s, c.lost)
						}
					}
					pa, po := wa.step(), wo.step()
					must.Eq(t, po.Decisions, pa.Decisions, must.Sprintf("seed %d cycle %d", seed, cycle))
					must.Eq(t, po.Preemptions, pa.Preemptions, must.Sprintf("seed %d cycle %d", seed, cycle))
					for _, p := range pa.Preemptions {
						if p.Cause == CauseFairShare {
							fair++
						}
					}
				}
			}
			must.Greater(t, 5, fair, must.Sprint("the clusters must preempt for fairness"))
		})
	}
}

// startedBefore makes every started allocation one that started lost
// before now and never checkpointed.
func startedBefore(s *Snapshot, lost time.Duration) {
	for _, a := range s.Allocs {
		if a.Started {
			a.StartedAt, a.LastCheckpoint = s.Now.Add(-lost), time.Time{}
		}
	}
}

// markSaving sets every group's SavesOnStop to what saves says of its job.
func markSaving(s *Snapshot, saves func(*Job) bool) {
	for _, j := range s.Jobs {
		for i := range j.Groups {
			j.Groups[i].SavesOnStop = saves(j)
		}
	}
}
