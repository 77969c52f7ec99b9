//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// starvedHeadConfig: a job starves after 3 s and a fairness victim must
// have run 2 s. Fair share follows the gap rule: under the default rule,
// auto, the trainers (ckpt driver, they save when stopped) are judged by
// entitlement, which lets team-a's job take one before it starves
// (TestE2E_FairShareAutoDefault); these tests are about the starved head.
const starvedHeadConfig = `cycle_interval = "1s"
starvation_timeout = "3s"
fair_min_run = "2s"
backoff_base = "1s"
backoff_cap = "2s"
fair_share_rule = "gap"
`

// trainers are team-b's standard-class toy trainers, 8 GPUs each, that
// checkpoint every second.
var trainers = []string{"b1", "b2", "b3"}

// TestE2E_StarvedHeadPreemptsAnyClass: a cohort's starved head takes
// back lent capacity from a borrower of a higher class (docs/governor.md,
// Preemption, "Fair share"; round 7 in docs/simulator.md). Three clients
// of 8 GPUs; one cohort of team-a (nominal 4), team-b (nominal 12) and
// team-c (nominal 8, idle, so it lends). team-b borrows all 24 GPUs with
// three standard trainers. team-a's low 8-GPU job needs to borrow 4, and
// the cohort has nothing left to lend: it fails quota. Reclaim does not
// apply (the job is above team-a's nominal) and an ordinary fairness
// preemption may not take a job of a higher class; once the job has
// waited the starvation timeout it is the cohort's starved head (team-a
// uses less than 3/4 of its nominal) and preempts exactly one of team-b's
// trainers (cause fair-share), leaving team-b 16 GPUs, above its
// nominal. The victim checkpoints when stopped, waits queued, and when
// team-a's job ends runs again from its checkpoint.
func TestE2E_StarvedHeadPreemptsAnyClass(t *testing.T) {
	start := time.Now()
	pe := newCkptEnv(t, starvedHeadConfig, map[string]map[string]string{
		"team-a": {"allot.quota.gpu": "4", "allot.limit.gpu": "24"},
		"team-b": {"allot.quota.gpu": "12", "allot.limit.gpu": "24"},
		"team-c": {"allot.quota.gpu": "8", "allot.limit.gpu": "24"},
	})
	t.Logf("cluster and governor up in %s", time.Since(start).Round(time.Millisecond))
	old := pe.borrowWithTrainers(t)

	submitted := time.Now()
	pe.train("team-a", "big", "low", 1, 8, "-step-time", "100ms")
	pe.runningAllocs("team-a", "big", 1, 60*time.Second, nil)
	t.Logf("team-a/big runs %s after its submission", time.Since(submitted).Round(time.Millisecond))

	p := pe.onlyFairSharePreemption(t)
	must.True(t, !p.Time.Before(submitted.Add(3*time.Second)),
		must.Sprintf("the preemption (%s) waited for the starvation timeout after the submission (%s)", p.Time, submitted))
	victim := p.Victims[0].JobID
	var still []string
	for _, id := range trainers {
		if id != victim {
			still = append(still, id)
		}
	}
	for _, id := range still {
		must.Zero(t, jobmeta.Parse(pe.job("team-b", id).Meta).Requeues, must.Sprintf("%s was not requeued", id))
		must.NotNil(t, pe.runningAlloc("team-b", id, ""), must.Sprintf("%s still runs", id))
	}
	must.Eq(t, 1, jobmeta.Parse(pe.job("team-b", victim).Meta).Requeues)
	pe.waitWhy("team-b", victim, "queued") // the victim waits

	// When team-a's job ends, the victim runs again from its checkpoint.
	pe.stop("team-a", "big")
	resumed := pe.runningAllocs("team-b", victim, 1, 60*time.Second, map[string]bool{old[victim]: true})[0]
	pe.checkResumed(t, victim, old[victim], resumed.ID)
	t.Logf("starved head e2e: %s in all", time.Since(start).Round(time.Millisecond))
}

// borrowWithTrainers runs team-b's trainers, waits until each has saved
// a checkpoint and returns their allocations by job.
func (e *preemptEnv) borrowWithTrainers(t *testing.T) map[string]string {
	old := map[string]string{}
	for _, id := range trainers {
		e.train("team-b", id, "standard", 1, 8, "-step-time", "100ms", "-save-every", "10")
	}
	for _, id := range trainers {
		old[id] = e.runningAllocs("team-b", id, 1, 90*time.Second, nil)[0].ID
	}
	e.waitCheckpointed(trainers, old)
	return old
}

// onlyFairSharePreemption asserts that the governor recorded exactly one
// preemption: team-a/big (class low) took one standard trainer of
// team-b's for fairness, losing under 5 s of work, counted under reason
// fair-share. It returns that decision.
func (e *preemptEnv) onlyFairSharePreemption(t *testing.T) allotapi.Decision {
	p := e.onlyPreemption(t, "team-a/big", "fair-share")
	must.Eq(t, "low", p.Class)
	must.SliceLen(t, 1, p.Victims, must.Sprintf("decision: %+v", p))
	v := p.Victims[0]
	must.Eq(t, "team-b", v.Namespace)
	must.SliceContains(t, trainers, v.JobID)
	must.Eq(t, "standard", v.Class, must.Sprint("the victim's class is above the head's"))
	must.Less(t, 5.0, v.LostWorkSeconds, must.Sprint("the victim checkpointed about a second before"))
	must.Eq(t, `allot_preemptions_total{reason="fair-share"} 1`, e.metric("allot_preemptions_total{"))
	return p
}

// TestE2E_StarvedHeadTakesBackPassedJob: a starved head takes back the
// place of a job of its own tenant and class that passed it while it
// waited (cause queue-order; docs/governor.md, Preemption). Three
// clients of 8 GPUs. team-b (nominal 16) runs two 8-GPU trainers, two
// whole nodes at its nominal: nothing to reclaim, nothing to lend.
// team-a (nominal 12) runs o1, 4 GPUs for about 10 s, on the third node;
// its 8-GPU job big does not fit the 4 GPUs left and waits; p1 (4 GPUs,
// standard like big), submitted after big, fits them and runs. When o1
// ends big still does not fit, p1 holding half the node. Past the
// starvation timeout big is the cohort's starved head (team-a uses 4 of
// its 12) and preempts p1, and nothing else; p1 checkpoints, waits
// queued behind big, and resumes from its checkpoint when big ends.
func TestE2E_StarvedHeadTakesBackPassedJob(t *testing.T) {
	start := time.Now()
	pe := newCkptEnv(t, starvedHeadConfig, map[string]map[string]string{
		"team-a": {"allot.quota.gpu": "12", "allot.limit.gpu": "24"},
		"team-b": {"allot.quota.gpu": "16", "allot.limit.gpu": "24"},
	})
	t.Logf("cluster and governor up in %s", time.Since(start).Round(time.Millisecond))
	old := map[string]string{}
	for _, id := range []string{"b1", "b2"} {
		pe.train("team-b", id, "standard", 1, 8, "-step-time", "100ms", "-save-every", "10")
		old[id] = pe.runningAllocs("team-b", id, 1, 90*time.Second, nil)[0].ID
	}
	pe.train("team-a", "o1", "standard", 1, 4, "-step-time", "100ms", "-steps", "100")
	pe.runningAllocs("team-a", "o1", 1, 60*time.Second, nil)
	pe.train("team-a", "big", "standard", 1, 8, "-step-time", "100ms")
	must.Eq(t, "queued", pe.why("team-a", "big").State, must.Sprint("big does not fit the 4 GPUs left"))
	pe.train("team-a", "p1", "standard", 1, 4, "-step-time", "100ms", "-save-every", "10")
	old["p1"] = pe.runningAllocs("team-a", "p1", 1, 60*time.Second, nil)[0].ID
	must.Eq(t, "queued", pe.why("team-a", "big").State, must.Sprint("p1 passed big"))
	pe.waitCheckpointed([]string{"p1"}, old)

	pe.runningAllocs("team-a", "big", 1, 90*time.Second, nil)
	t.Logf("team-a/big runs %s after the start", time.Since(start).Round(time.Millisecond))
	p := pe.onlyPreemption(t, "team-a/big", "queue-order")
	must.StrContains(t, p.Reason, "queued after it and admitted while it waited")
	must.Eq(t, []string{"team-a/p1"}, victimKeys(p), must.Sprintf("decision: %+v", p))
	must.Eq(t, `allot_preemptions_total{reason="queue-order"} 1`, pe.metric("allot_preemptions_total{"))
	for _, id := range []string{"b1", "b2"} {
		must.Zero(t, jobmeta.Parse(pe.job("team-b", id).Meta).Requeues, must.Sprintf("%s was not requeued", id))
		must.NotNil(t, pe.runningAlloc("team-b", id, ""), must.Sprintf("%s still runs", id))
	}
	w := pe.why("team-a", "p1")
	must.Eq(t, "queued", w.State, must.Sprintf("p1 waits behind big: %+v", w))

	pe.stop("team-a", "big")
	resumed := pe.runningAllocs("team-a", "p1", 1, 60*time.Second, map[string]bool{old["p1"]: true})[0]
	pe.checkResumed(t, "p1", old["p1"], resumed.ID)
	t.Logf("passed-job e2e: %s in all", time.Since(start).Round(time.Millisecond))
}

// onlyPreemption asserts that the governor recorded exactly one
// preemption, by job key with cause, and returns it.
func (e *preemptEnv) onlyPreemption(t *testing.T, key, cause string) allotapi.Decision {
	var preemptions []allotapi.Decision
	for _, d := range e.decisions() {
		if d.Kind == "preemption" {
			preemptions = append(preemptions, d)
		}
	}
	must.SliceLen(t, 1, preemptions, must.Sprintf("decisions: %+v", e.decisions()))
	p := preemptions[0]
	t.Logf("the preemption: %s", p.Reason)
	must.Eq(t, key, p.Namespace+"/"+p.JobID)
	must.Eq(t, cause, p.Cause, must.Sprintf("decision: %+v", p))
	must.StrContains(t, p.Reason, "its cohort's starved head")
	return p
}

// victimKeys lists a preemption's victims as ns/id.
func victimKeys(p allotapi.Decision) []string {
	var out []string
	for _, v := range p.Victims {
		out = append(out, v.Namespace+"/"+v.JobID)
	}
	return out
}
