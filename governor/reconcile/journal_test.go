package reconcile

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/metrics"
)

func TestRecordsKeepOnlyAppliedVictims(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	v1 := engine.Victim{Namespace: "a", JobID: "v1", Class: "low", LostWork: time.Minute}
	v2 := engine.Victim{Namespace: "a", JobID: "v2", Class: "low"}
	plan := &engine.Plan{Now: now, Preemptions: []engine.Preemption{
		{Namespace: "b", JobID: "boss", Cause: engine.CauseReclaim, Victims: []engine.Victim{v1, v2}},
		{Namespace: "b", JobID: "nobody-stopped", Cause: engine.CauseReclaim, Victims: []engine.Victim{{Namespace: "a", JobID: "v3"}}},
	}}
	res := actuate.Result{Applied: []engine.Decision{
		{Action: engine.Requeue, Namespace: "a", JobID: "v1", Cause: engine.CauseReclaim},
		{Action: engine.Requeue, Namespace: "c", JobID: "gang", Cause: engine.CauseGangTimeout, Reason: "gang timeout"},
		{Action: engine.Admit, Namespace: "c", JobID: "other"},
		{Action: engine.Unpin, Namespace: "c", JobID: "pinned", Reason: "blocked in Nomad"},
	}}
	got := records(plan, res)
	must.Eq(t, []Record{
		{Time: now, Kind: "requeue", Namespace: "c", JobID: "gang", Cause: engine.CauseGangTimeout, Reason: "gang timeout"},
		{Time: now, Kind: "unpin", Namespace: "c", JobID: "pinned", Cause: "blocked", Reason: "blocked in Nomad"},
		{Time: now, Kind: "preemption", Namespace: "b", JobID: "boss", Cause: engine.CauseReclaim, Victims: []engine.Victim{v1}},
	}, got)
}

func TestJournalKeepsTheNewest(t *testing.T) {
	var j Journal
	for i := 0; i < journalSize+3; i++ {
		j.Add(Record{JobID: string(rune('a' + i%26)), Time: time.Unix(int64(i), 0)})
	}
	recent := j.Recent()
	must.SliceLen(t, journalSize, recent)
	must.Eq(t, time.Unix(int64(journalSize+2), 0), recent[0].Time)
	must.Eq(t, time.Unix(3, 0), recent[len(recent)-1].Time)
}

func TestRequeuesAreCounted(t *testing.T) {
	m := metrics.New()
	r := &Reconciler{Metrics: m}
	r.observeResult(&engine.Plan{}, actuate.Result{Applied: []engine.Decision{
		{Action: engine.Requeue, Namespace: "a", JobID: "v1", Cause: engine.CauseReclaim, LostWork: 90 * time.Second},
		{Action: engine.Requeue, Namespace: "a", JobID: "v2", Cause: engine.CausePriority, LostWork: 10 * time.Second},
		{Action: engine.Requeue, Namespace: "c", JobID: "gang", Cause: engine.CauseGangTimeout},
	}})
	must.Eq(t, 1.0, testutil.ToFloat64(m.Preemptions.WithLabelValues("reclaim")))
	must.Eq(t, 1.0, testutil.ToFloat64(m.Preemptions.WithLabelValues("priority")))
	must.Eq(t, 100.0, testutil.ToFloat64(m.LostWork))
	must.Eq(t, 1.0, testutil.ToFloat64(m.HeldTotal.WithLabelValues("c", "gang-timeout")))
}

// TestAudit30_RecordsNameTheSubmitter: holds, stops and requeues carry the
// accessor of the token that submitted the job through the governor, and
// decisions Nomad refused for want of a Vault/Consul token are recorded
// as blocked.
func TestAudit30_RecordsNameTheSubmitter(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	hold := engine.Decision{Action: engine.Hold, Namespace: "a", JobID: "h", Reason: "over"}
	stop := engine.Decision{Action: engine.Stop, Namespace: "a", JobID: "d", Cause: CauseClass, Reason: "class"}
	vault := engine.Decision{Action: engine.Hold, Namespace: "a", JobID: "v", Reason: "over"}
	res := actuate.Result{Applied: []engine.Decision{hold, stop},
		Blocked:     []actuate.Blocked{{Decision: vault}},
		SubmittedBy: map[string]string{"a/h": "acc-1", "a/v": "acc-2"}}
	got := records(&engine.Plan{Now: now}, res)
	must.SliceLen(t, 3, got)
	must.Eq(t, Record{Time: now, Kind: "hold", Namespace: "a", JobID: "h", Cause: "over-limit", Reason: "over", SubmittedBy: "acc-1"}, got[0])
	must.Eq(t, Record{Time: now, Kind: "stop", Namespace: "a", JobID: "d", Cause: CauseClass, Reason: "class"}, got[1])
	must.Eq(t, "blocked", got[2].Kind)
	must.Eq(t, CauseSubmitterToken, got[2].Cause)
	must.Eq(t, "acc-2", got[2].SubmittedBy)
	must.StrContains(t, got[2].Reason, "not retried until the job changes")
}
