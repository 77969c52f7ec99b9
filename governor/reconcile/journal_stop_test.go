package reconcile

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/engine"
)

func TestAudit23_StoppedDispatchedVictimIsInThePreemptionRecord(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	child := engine.Victim{Namespace: "b", JobID: "param/dispatch-1", Class: "standard"}
	plan := &engine.Plan{Now: now, Preemptions: []engine.Preemption{
		{Namespace: "a", JobID: "reclaim", Cause: engine.CauseReclaim, Victims: []engine.Victim{child}}}}
	res := actuate.Result{Applied: []engine.Decision{{Action: engine.Stop, Namespace: "b", JobID: "param/dispatch-1",
		Cause: engine.CauseReclaim, Reason: "preempted by a/reclaim (reclaim): …; stopped, not requeued"}}}
	got := records(plan, res)
	must.SliceLen(t, 2, got)
	must.Eq(t, "stop", got[0].Kind)
	must.Eq(t, engine.CauseReclaim, got[0].Cause)
	must.Eq(t, Record{Time: now, Kind: "preemption", Namespace: "a", JobID: "reclaim", Cause: engine.CauseReclaim, Victims: []engine.Victim{child}}, got[1])
}
