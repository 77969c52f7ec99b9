//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// TestE2E_FairShareAnyClass: under fair_share_rule = "gap", with
// fair_share_classes = "any" and fair_share_gap = 0.02 (docs/governor.md, Preemption, "Fair share";
// round 20 in docs/simulator.md) a borrower's low job takes a standard
// job of a tenant that borrows far more. Three clients of 8 GPUs; one
// cohort of team-a (nominal 4), team-b (nominal 4) and team-c (nominal
// 16, idle, so it lends). team-a runs a1, its nominal 4 GPUs; team-b
// borrows the other 20 with two 8-GPU trainers and one 4-GPU trainer,
// all standard. team-a's low 4-GPU job would borrow 4 (share 2 after),
// team-b keeps at least 16 of its 4 (share 4) after giving back any one
// trainer, and nothing is left to lend: the job fails quota. It is no
// reclaim (team-a is at its nominal) and no starved head (team-a uses
// all of its nominal; the starvation timeout is 10 minutes), and by the
// default class rule a low job takes no standard one. With "any" it
// preempts exactly one of team-b's trainers (cause fair-share), which
// checkpoints, waits queued, and runs again from its checkpoint once
// team-a's job ends.
func TestE2E_FairShareAnyClass(t *testing.T) {
	start := time.Now()
	b := newBorrowers(t, `fair_share_rule = "gap"
fair_share_gap = 0.02
fair_share_classes = "any"
`)
	submitted := time.Now()
	b.pe.train("team-a", "fair", "low", 1, 4, "-step-time", "100ms")
	b.pe.runningAllocs("team-a", "fair", 1, 60*time.Second, nil)
	t.Logf("team-a/fair runs %s after its submission", time.Since(submitted).Round(time.Millisecond))

	d := fairShareDecision(t, b.pe, "team-a/fair fair-share")
	must.Eq(t, "low", d.Class)
	must.StrContains(t, d.Reason, "tenant team-a borrows less than the victims' tenants (weighted share after this job ≥ 0.02 below theirs")
	must.Eq(t, "standard", d.Victims[0].Class, must.Sprint("the victim's class is above the preemptor's"))
	b.resumesAfter(t, "fair", d.Victims[0].JobID)
	t.Logf("fair share any class e2e: %s in all", time.Since(start).Round(time.Millisecond))
}

// TestE2E_FairShareEntitlement: with fair_share_rule = "entitlement"
// (docs/governor.md, Preemption, "Fair share"; round 21 in
// docs/simulator.md) a borrower's 8-GPU job takes an 8-GPU trainer of a
// tenant above its fair share, which the default gap rule refuses. The
// cluster and cohort are TestE2E_FairShareAnyClass's: team-a runs its
// nominal 4 GPUs, team-b borrows the other 20 (two 8-GPU trainers and a
// 4-GPU one, all standard), team-c lends its 16 and wants none. team-a's
// standard 8-GPU job makes both demands at least 12: each is entitled
// to 12 of the 24 GPUs. Preempting one 8-GPU trainer leaves both at
// exactly 12, where the gap rule would need team-b's weighted share
// (12 ÷ 4 = 3) 0.1 above team-a's (also 3): it preempts exactly that
// one (cause fair-share), which checkpoints, waits queued, and runs
// again from its checkpoint once team-a's job ends.
func TestE2E_FairShareEntitlement(t *testing.T) {
	start := time.Now()
	b := newBorrowers(t, `fair_share_rule = "entitlement"
`)
	submitted := time.Now()
	b.pe.train("team-a", "gang", "standard", 1, 8, "-step-time", "100ms")
	b.pe.runningAllocs("team-a", "gang", 1, 60*time.Second, nil)
	t.Logf("team-a/gang runs %s after its submission", time.Since(submitted).Round(time.Millisecond))

	d := fairShareDecision(t, b.pe, "team-a/gang fair-share")
	must.StrContains(t, d.Reason, "tenant team-a uses less than its fair share of the cohort (gpu: uses 4, entitled to 12.0)")
	must.SliceContains(t, []string{"b1", "b2"}, d.Victims[0].JobID, must.Sprint("an 8-GPU trainer frees a whole client"))
	b.resumesAfter(t, "gang", d.Victims[0].JobID)
	t.Logf("fair share entitlement e2e: %s in all", time.Since(start).Round(time.Millisecond))
}

// TestE2E_FairShareAutoDefault: with the default fair_share_rule,
// "auto", team-b's trainers run under the ckpt driver and save a
// checkpoint when stopped, so a fair-share preemption of them is judged
// by entitlement, of any class: the scene of TestE2E_FairShareEntitlement
// with no fair-share setting gives its outcome, where the gap rule would
// keep team-a's 8-GPU job waiting (both shares 3 after the preemption).
// team-a's job is of class low, below the trainers' standard, which only
// fair_share_classes = "any" allows for victims that do not save.
func TestE2E_FairShareAutoDefault(t *testing.T) {
	start := time.Now()
	b := newBorrowers(t, "")
	b.pe.train("team-a", "gang", "low", 1, 8, "-step-time", "100ms")
	b.pe.runningAllocs("team-a", "gang", 1, 60*time.Second, nil)

	d := fairShareDecision(t, b.pe, "team-a/gang fair-share")
	must.Eq(t, "low", d.Class)
	must.Eq(t, "standard", d.Victims[0].Class, must.Sprint("the victim's class is above the preemptor's"))
	must.StrContains(t, d.Reason, "tenant team-a uses less than its fair share of the cohort (gpu: uses 4, entitled to 12.0)")
	must.SliceContains(t, []string{"b1", "b2"}, d.Victims[0].JobID, must.Sprint("an 8-GPU trainer frees a whole client"))
	b.resumesAfter(t, "gang", d.Victims[0].JobID)
	t.Logf("fair share auto (default) e2e: %s in all", time.Since(start).Round(time.Millisecond))
}

// borrowers is the scene of the fair-share tests: three clients of 8
// GPUs; one cohort of team-a (nominal 4), team-b (nominal 4) and team-c
// (nominal 16, idle, so it lends). team-a runs a1, its nominal 4 GPUs;
// team-b borrows the other 20 with the standard trainers b1 and b2 (8
// GPUs each) and b3 (4), which have all checkpointed.
type borrowers struct {
	pe  *preemptEnv
	ids []string
	old map[string]string // trainer → its first allocation
}

// newBorrowers starts the scene with the governor settings fairness adds
// to the common ones.
func newBorrowers(t *testing.T, fairness string) *borrowers {
	start := time.Now()
	pe := newCkptEnv(t, `cycle_interval = "1s"
starvation_timeout = "10m"
fair_min_run = "2s"
backoff_base = "1s"
backoff_cap = "2s"
`+fairness, map[string]map[string]string{
		"team-a": {"allot.quota.gpu": "4", "allot.limit.gpu": "24"},
		"team-b": {"allot.quota.gpu": "4", "allot.limit.gpu": "24"},
		"team-c": {"allot.quota.gpu": "16", "allot.limit.gpu": "24"},
	})
	t.Logf("cluster and governor up in %s", time.Since(start).Round(time.Millisecond))
	pe.train("team-a", "a1", "standard", 1, 4, "-step-time", "100ms")
	pe.runningAllocs("team-a", "a1", 1, 90*time.Second, nil)
	b := &borrowers{pe: pe, ids: []string{"b1", "b2", "b3"}, old: map[string]string{}}
	for i, size := range []int{8, 8, 4} {
		id := b.ids[i]
		pe.train("team-b", id, "standard", 1, size, "-step-time", "100ms", "-save-every", "10")
		b.old[id] = pe.runningAllocs("team-b", id, 1, 90*time.Second, nil)[0].ID
	}
	pe.waitCheckpointed(b.ids, b.old)
	return b
}

// resumesAfter checks that victim alone of team-b's trainers was
// requeued, once, by one fair-share preemption, waits queued, and runs
// again from its checkpoint once team-a's job preemptor is stopped.
func (b *borrowers) resumesAfter(t *testing.T, preemptor, victim string) {
	t.Helper()
	must.Eq(t, `allot_preemptions_total{reason="fair-share"} 1`, b.pe.metric("allot_preemptions_total{"))
	for _, id := range b.ids {
		want := 0
		if id == victim {
			want = 1
		}
		must.Eq(t, want, jobmeta.Parse(b.pe.job("team-b", id).Meta).Requeues, must.Sprintf("%s's requeues", id))
	}
	b.pe.waitWhy("team-b", victim, "queued")
	b.pe.stop("team-a", preemptor)
	resumed := b.pe.runningAllocs("team-b", victim, 1, 60*time.Second, map[string]bool{b.old[victim]: true})[0]
	b.pe.checkResumed(t, victim, b.old[victim], resumed.ID)
}

// fairShareDecision checks that the governor decided exactly one preemption,
// want ("namespace/job cause"), of one team-b victim that checkpointed
// about a second before and no starved head's, and returns it.
func fairShareDecision(t *testing.T, pe *preemptEnv, want string) allotapi.Decision {
	t.Helper()
	var preemptions []allotapi.Decision
	var keys []string
	for _, d := range pe.decisions() {
		if d.Kind == "preemption" {
			preemptions = append(preemptions, d)
			keys = append(keys, d.Namespace+"/"+d.JobID+" "+d.Cause)
		}
	}
	must.Eq(t, []string{want}, keys, must.Sprintf("decisions: %+v", pe.decisions()))
	d := preemptions[0]
	must.StrNotContains(t, d.Reason, "starved head")
	must.SliceLen(t, 1, d.Victims, must.Sprintf("decision: %+v", d))
	must.Eq(t, "team-b", d.Victims[0].Namespace)
	must.Less(t, 5.0, d.Victims[0].LostWorkSeconds, must.Sprint("the victim checkpointed about a second before"))
	return d
}

// TestE2E_OwnClassWhileBorrowingEntitlement: under fair_share_rule =
// "entitlement" a borrowing tenant's higher-class job still takes its own
// lower-class job (docs/simulator.md, round 22: round 21's rule refused
// it). Two 4-GPU clients; team-a (nominal 4, limit 8) runs two low
// trainers on all 8 GPUs, borrowing team-b's idle 4; its standard job s1
// then preempts one of them (cause priority) and runs.
func TestE2E_OwnClassWhileBorrowingEntitlement(t *testing.T) {
	e := newPreemptEnvWith(t, "fair_share_rule = \"entitlement\"\n")
	for _, id := range []string{"l1", "l2"} {
		e.train("team-a", id, "low", 1, 4, "-step-time", "100ms", "-save-every", "5")
		e.runningAllocs("team-a", id, 1, 60*time.Second, nil)
	}
	e.train("team-a", "s1", "standard", 1, 4, "-step-time", "100ms")
	p := e.awaitOnePreemption("team-a", "s1", "priority")
	must.SliceLen(t, 1, p.Victims)
	must.SliceContains(t, []string{"l1", "l2"}, p.Victims[0].JobID, must.Sprint("team-a's own low job gives way"))
	e.runningAllocs("team-a", "s1", 1, 90*time.Second, nil)
}

// TestE2E_QueueOrderShare: with queue_order = "share" (docs/governor.md,
// "Queue order by share"; round 23 in docs/simulator.md) the GPUs a job
// frees go to the tenant with the lower weighted share, though its job
// is of a lower class and was queued later. Three clients of 8 GPUs;
// team-a (nominal 24) runs three high 8-GPU trainers, all it may use;
// its fourth, next (high, 8 GPUs), waits, and then team-b's small (low,
// 1 GPU; team-b holds nothing) waits too: no room, and no victim (team-a
// is within its nominal, and neither job outranks one of its own). When
// a1 stops, the class order would admit next onto the freed client;
// the share order admits small there first, and next, with 7 GPUs free,
// keeps waiting on fit.
func TestE2E_QueueOrderShare(t *testing.T) {
	start := time.Now()
	pe := newCkptEnv(t, `cycle_interval = "1s"
queue_order = "share"
`, map[string]map[string]string{
		"team-a": {"allot.quota.gpu": "24", "allot.limit.gpu": "24"},
		"team-b": {"allot.quota.gpu": "8", "allot.limit.gpu": "8"},
	})
	for _, id := range []string{"a1", "a2", "a3"} {
		pe.train("team-a", id, "high", 1, 8, "-step-time", "100ms")
		pe.runningAllocs("team-a", id, 1, 90*time.Second, nil)
	}
	pe.train("team-a", "next", "high", 1, 8, "-step-time", "100ms")
	pe.waitWhy("team-a", "next", "queued")
	pe.train("team-b", "small", "low", 1, 1, "-step-time", "100ms")
	w := pe.waitWhy("team-b", "small", "queued")
	must.EqOp(t, 1, w.Position, must.Sprintf("team-b's low job stands first: %+v", w))
	must.EqOp(t, 2, pe.why("team-a", "next").Position)

	pe.stop("team-a", "a1")
	pe.runningAllocs("team-b", "small", 1, 60*time.Second, nil)
	next := pe.waitWhy("team-a", "next", "queued", "fit")
	t.Logf("team-a/next: %s", next.Reason)
	t.Logf("queue order share e2e: %s in all", time.Since(start).Round(time.Millisecond))
}
