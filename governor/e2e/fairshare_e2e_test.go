//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
)

// TestE2E_FairShareAnyClass: with fair_share_classes = "any" and
// fair_share_gap = 0.02 (docs/governor.md, Preemption, "Fair share";
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
	pe := newCkptEnv(t, `cycle_interval = "1s"
starvation_timeout = "10m"
fair_min_run = "2s"
fair_share_gap = 0.02
fair_share_classes = "any"
backoff_base = "1s"
backoff_cap = "2s"
`, map[string]map[string]string{
		"team-a": {"allot.quota.gpu": "4", "allot.limit.gpu": "24"},
		"team-b": {"allot.quota.gpu": "4", "allot.limit.gpu": "24"},
		"team-c": {"allot.quota.gpu": "16", "allot.limit.gpu": "24"},
	})
	t.Logf("cluster and governor up in %s", time.Since(start).Round(time.Millisecond))
	pe.train("team-a", "a1", "standard", 1, 4, "-step-time", "100ms")
	pe.runningAllocs("team-a", "a1", 1, 90*time.Second, nil)
	ids, sizes := []string{"b1", "b2", "b3"}, []int{8, 8, 4}
	old := map[string]string{}
	for i, id := range ids {
		pe.train("team-b", id, "standard", 1, sizes[i], "-step-time", "100ms", "-save-every", "10")
		old[id] = pe.runningAllocs("team-b", id, 1, 90*time.Second, nil)[0].ID
	}
	pe.waitCheckpointed(ids, old)

	submitted := time.Now()
	pe.train("team-a", "fair", "low", 1, 4, "-step-time", "100ms")
	pe.runningAllocs("team-a", "fair", 1, 60*time.Second, nil)
	t.Logf("team-a/fair runs %s after its submission", time.Since(submitted).Round(time.Millisecond))

	var preemptions []string
	for _, d := range pe.decisions() {
		if d.Kind == "preemption" {
			preemptions = append(preemptions, d.Namespace+"/"+d.JobID+" "+d.Cause)
		}
	}
	must.Eq(t, []string{"team-a/fair fair-share"}, preemptions, must.Sprintf("decisions: %+v", pe.decisions()))
	var victim string
	for _, d := range pe.decisions() {
		if d.Kind != "preemption" {
			continue
		}
		must.Eq(t, "low", d.Class)
		must.StrContains(t, d.Reason, "tenant team-a borrows less than the victims' tenants (weighted share after this job ≥ 0.02 below theirs")
		must.StrNotContains(t, d.Reason, "starved head")
		must.SliceLen(t, 1, d.Victims, must.Sprintf("decision: %+v", d))
		v := d.Victims[0]
		must.Eq(t, "team-b", v.Namespace)
		must.Eq(t, "standard", v.Class, must.Sprint("the victim's class is above the preemptor's"))
		must.Less(t, 5.0, v.LostWorkSeconds, must.Sprint("the victim checkpointed about a second before"))
		victim = v.JobID
	}
	must.Eq(t, `allot_preemptions_total{reason="fair-share"} 1`, pe.metric("allot_preemptions_total{"))
	for _, id := range ids {
		if id != victim {
			must.Zero(t, jobmeta.Parse(pe.job("team-b", id).Meta).Requeues, must.Sprintf("%s was not requeued", id))
		}
	}
	must.Eq(t, 1, jobmeta.Parse(pe.job("team-b", victim).Meta).Requeues)
	pe.waitWhy("team-b", victim, "queued")

	pe.stop("team-a", "fair")
	resumed := pe.runningAllocs("team-b", victim, 1, 60*time.Second, map[string]bool{old[victim]: true})[0]
	pe.checkResumed(t, victim, old[victim], resumed.ID)
	t.Logf("fair share any class e2e: %s in all", time.Since(start).Round(time.Millisecond))
}
