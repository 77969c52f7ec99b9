package reconcile

import (
	"fmt"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// Blocked evaluations and the proxy's admission base (issue 14 item 5):
// a blocked evaluation changes no accounting, so a burst of them (every
// job registered straight to Nomad into a full pool gets one) must not
// make each proxied admission rebuild its base from a full snapshot; the
// cycle must still see them (verdict "blocked in Nomad", Unpin).

// blockedEval reports evaluation id of ns/job with status at the job's
// version.
func (e *phantomEnv) blockedEval(id, ns, job, status string, version uint64) {
	e.t.Helper()
	e.apply(api.TopicEvaluation, map[string]any{"Evaluation": &api.Evaluation{ID: id, Namespace: ns, JobID: job,
		Status: status, TriggeredBy: "queued-allocs", JobModifyIndex: version}})
}

// bothAdmittedPending: team-b's two 4-GPU jobs admitted (pinned) on the
// two 4-GPU nodes, stored by Nomad, nothing placed yet.
func bothAdmittedPending(t *testing.T) *phantomEnv {
	e := newPhantomEnv(t, heldJob("team-b", "borrow0"), heldJob("team-b", "borrow1"))
	acts, _ := e.cycle()
	must.Eq(t, map[string]engine.Action{"team-b/borrow0": engine.Admit, "team-b/borrow1": engine.Admit}, acts)
	for _, id := range []string{"borrow0", "borrow1"} {
		must.MapContainsKey(t, e.mem.jobs["team-b/"+id].Meta, jobmeta.PinKey, must.Sprint("admitted with a placement pin"))
		e.job("team-b", id, "pending")
	}
	return e
}

func TestBlockedEvaluationsKeepTheAdmissionBase(t *testing.T) {
	e := bothAdmittedPending(t)
	first, _ := e.r.Reserve(cluster.ConvertJob(heldJob("team-a", "x0")))
	must.False(t, first.Admitted, must.Sprintf("team-b's admissions hold both nodes: %s", first.Reason))
	base := e.r.base
	must.NotNil(t, base)
	gen := e.r.Store.Gen()
	// A burst: both admissions blocked in Nomad, and evaluations of jobs
	// the store does not know (a namespace it does not govern) blocked,
	// reblocked and completed.
	for _, id := range []string{"borrow0", "borrow1"} {
		e.blockedEval("ev-"+id, "team-b", id, api.EvalStatusBlocked, *e.mem.jobs["team-b/"+id].JobModifyIndex)
	}
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("direct%d", i)
		e.blockedEval("ev-"+id, "plain", id, api.EvalStatusBlocked, 5)
		e.blockedEval("ev-"+id, "plain", id, api.EvalStatusBlocked, 5)
		if i%2 == 0 {
			e.blockedEval("ev-"+id, "plain", id, api.EvalStatusComplete, 5)
		}
	}
	must.True(t, e.r.Store.Blocked("team-b", "borrow0"))
	must.Eq(t, gen, e.r.Store.Gen(), must.Sprint("blocked evaluations change no accounting: the generation stays"))
	for i := 1; i <= 3; i++ {
		v, _ := e.r.Reserve(cluster.ConvertJob(heldJob("team-a", fmt.Sprintf("x%d", i))))
		must.False(t, v.Admitted, must.Sprintf("a blocked admission keeps its reservation: %s", v.Reason))
		must.Eq(t, first.Reason, v.Reason)
		must.True(t, base == e.r.base, must.Sprintf("admission %d was decided against the base built before the burst, not a rebuilt one", i))
	}
	// The kept base decides as a fresh one would.
	probe := cluster.ConvertJob(heldJob("team-a", "probe"))
	kept := e.r.Evaluate(probe)
	e.r.dropBase()
	fresh := e.r.Evaluate(probe)
	must.False(t, base == e.r.base, must.Sprint("the probe's second verdict came from a rebuilt base"))
	must.Eq(t, fresh.Admitted, kept.Admitted)
	must.Eq(t, fresh.Reason, kept.Reason)
	must.Eq(t, fresh.Checks, kept.Checks)
}

func TestBlockedEvaluationsReachTheCycleWhileTheBaseIsKept(t *testing.T) {
	e := bothAdmittedPending(t)
	_, p := e.cycle()
	must.StrContains(t, p.Verdicts["team-b/borrow0"].Reason, "waiting for Nomad to place 1 of 1 allocations")
	held, _ := e.r.Reserve(cluster.ConvertJob(heldJob("team-a", "x0")))
	must.False(t, held.Admitted)
	base, gen := e.r.base, e.r.Store.Gen()
	version := *e.mem.jobs["team-b/borrow0"].JobModifyIndex
	select {
	case <-e.r.Store.Changed(): // the earlier events' signal
	default:
	}
	e.blockedEval("ev-b0", "team-b", "borrow0", api.EvalStatusBlocked, version)
	must.Eq(t, gen, e.r.Store.Gen())
	again, _ := e.r.Reserve(cluster.ConvertJob(heldJob("team-a", "x1")))
	must.Eq(t, held.Reason, again.Reason)
	must.True(t, base == e.r.base, must.Sprint("the admission base is kept"))
	select {
	case <-e.r.Store.Changed():
	default:
		t.Fatal("the blocked evaluation signals a change, so a cycle runs")
	}
	snap := e.r.Store.Snapshot(testNow())
	for _, j := range snap.Jobs {
		must.Eq(t, j.ID == "borrow0", j.Blocked, must.Sprintf("%s in the cycle's snapshot", j.Key()))
	}
	acts, p := e.cycle()
	v := p.Verdicts["team-b/borrow0"]
	must.Eq(t, engine.Admitted, v.State)
	must.StrContains(t, v.Reason, "blocked in Nomad")
	must.Eq(t, map[string]engine.Action{"team-b/borrow0": engine.Unpin}, acts,
		must.Sprint("admitted, pinned and blocked: unpinned, still admitted"))
	must.MapNotContainsKey(t, e.mem.jobs["team-b/borrow0"].Meta, jobmeta.PinKey)
	must.StrContains(t, p.Verdicts["team-b/borrow1"].Reason, "waiting for Nomad to place")
	// Nomad places it: the evaluation completes; the next cycle says so.
	e.blockedEval("ev-b0", "team-b", "borrow0", api.EvalStatusComplete, version)
	e.alloc("b0", "team-b", "borrow0", "n1", "run", "running")
	_, p = e.cycle()
	must.False(t, e.r.Store.Blocked("team-b", "borrow0"))
	must.Eq(t, "admitted: running under Nomad", p.Verdicts["team-b/borrow0"].Reason)
}
