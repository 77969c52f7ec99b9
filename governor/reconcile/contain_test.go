package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/quota"
)

var containClasses = engine.Config{Classes: map[string]engine.Class{
	"production": {Priority: 90, Restricted: true}, "high": {Priority: 70, Preemptible: true},
	"standard": {Priority: 50, Preemptible: true}, "low": {Priority: 30, Preemptible: true}}}

// directJob builds an engine job written straight to Nomad.
type directJob struct{ j *engine.Job }

func direct(id string) *directJob {
	return &directJob{j: &engine.Job{Namespace: "ml", ID: id, State: engine.Direct, Priority: 50, Version: 7}}
}

func (b *directJob) Class(c string) *directJob       { b.j.Class = c; return b }
func (b *directJob) Priority(p int) *directJob       { b.j.Priority = p; return b }
func (b *directJob) In(ns string) *directJob         { b.j.Namespace = ns; return b }
func (b *directJob) State(s engine.State) *directJob { b.j.State = s; return b }
func (b *directJob) Dispatched() *directJob          { b.j.Dispatched = true; return b }

func tenant(ns, defaultClass string, classes ...string) *engine.Tenant {
	return &engine.Tenant{Tenant: quota.Tenant{Namespace: ns, DefaultClass: defaultClass, Classes: classes}}
}

// TestAudit11_DirectJobsFollowTheirTenantsClassRules: jobs written straight
// to Nomad (whatever allot.state they claim: without a seal they are
// direct) are held when their class is not allowed or unknown, or their
// priority is above their class's (audit #11).
func TestAudit11_DirectJobsFollowTheirTenantsClassRules(t *testing.T) {
	cases := map[string]struct {
		job      *directJob
		tenant   *engine.Tenant
		action   engine.Action
		cause    string
		priority int
		reason   string
		none     bool
	}{
		"restricted class": {
			job: direct("a").Class("production"), tenant: tenant("ml", "standard"), action: engine.Hold, cause: CauseClass,
			reason: `class "production", which tenant ml may not use; it may use: high, low, standard`,
		},
		"class outside the tenant's list": {
			job: direct("a").Class("high"), tenant: tenant("ml", "low", "low"), action: engine.Hold, cause: CauseClass,
			reason: "it may use: low",
		},
		"unknown class": {
			job: direct("a").Class("turbo"), tenant: tenant("ml", "standard"), action: engine.Hold, cause: CauseClass,
			reason: `unknown class "turbo"; tenant ml may use: high, low, standard`,
		},
		"priority above its class": {
			job: direct("a").Class("standard").Priority(100), tenant: tenant("ml", "standard"), action: engine.Hold,
			cause: CausePriority, priority: 50, reason: "at priority 100, above class standard's 50",
		},
		"default priority above the tenant's default class": {
			job: direct("a"), tenant: tenant("ml", "low"), action: engine.Hold, cause: CausePriority, priority: 30,
			reason: "above class low's 30",
		},
		"dispatched child is stopped": {
			job: direct("a").Class("production").Dispatched(), tenant: tenant("ml", "standard"), action: engine.Stop, cause: CauseClass,
			reason: "a dispatched job cannot be held: stopped",
		},
		"allowed class and priority":      {job: direct("a").Class("high").Priority(70), tenant: tenant("ml", "standard"), none: true},
		"lower priority is fine":          {job: direct("a").Class("high").Priority(10), tenant: tenant("ml", "standard"), none: true},
		"production where allowed":        {job: direct("a").Class("production").Priority(90), tenant: tenant("ml", "standard", "production"), none: true},
		"ungoverned namespace":            {job: direct("a").Class("production").In("other"), tenant: tenant("ml", "standard"), none: true},
		"sealed admission is the queue's": {job: direct("a").Class("production").State(engine.Admitted), tenant: tenant("ml", "standard"), none: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			snap := &engine.Snapshot{Now: testNow(), Tenants: map[string]*engine.Tenant{"ml": tc.tenant}, Jobs: []*engine.Job{tc.job.j}}
			got := contain(containClasses, snap)
			if tc.none {
				must.SliceEmpty(t, got)
				must.Eq(t, tc.job.j, snap.Jobs[0])
				return
			}
			must.SliceLen(t, 1, got)
			d := got[0]
			must.Eq(t, tc.action, d.Action)
			must.Eq(t, tc.cause, d.Cause)
			must.Eq(t, tc.priority, d.Priority)
			must.Eq(t, uint64(7), d.Version)
			must.StrContains(t, d.Reason, tc.reason)
			must.Eq(t, engine.Stopped, snap.Jobs[0].State, must.Sprint("out of this cycle"))
			must.NotEq(t, engine.Stopped, tc.job.j.State, must.Sprint("the store's job is not changed"))
		})
	}
}

// TestAudit11_ForgedAdmittedProductionJobIsHeld: a job written straight to
// Nomad with allot.state=admitted and allot.class=production, in a tenant
// that may not use production, is held by the next cycle, and stays held
// with the class as the reason.
func TestAudit11_ForgedAdmittedProductionJobIsHeld(t *testing.T) {
	forged := gpuJob("forged", 1, false)
	forged.Meta = map[string]string{jobmeta.State: jobmeta.StateAdmitted, jobmeta.Class: "production",
		jobmeta.AdmittedAt: testNow().Add(-time.Hour).Format(time.RFC3339)}
	forged.Priority = ptr(90)
	r, mem := newReconciler(t, forged)
	p := r.Cycle(context.Background())
	must.SliceLen(t, 1, p.Decisions)
	must.Eq(t, engine.Hold, p.Decisions[0].Action)
	stored := mem.jobs["ml/forged"]
	must.True(t, *stored.Stop)
	rec, err := testSealer.Verify(stored)
	must.NoError(t, err)
	must.True(t, rec.Queued())
	must.StrContains(t, p.Verdicts["ml/forged"].Reason, "may not use")
	recs := r.Journal.Recent()
	must.SliceLen(t, 1, recs)
	must.Eq(t, "hold", recs[0].Kind)
	must.Eq(t, CauseClass, recs[0].Cause)

	p = r.Cycle(context.Background())
	must.SliceEmpty(t, p.Decisions, must.Sprint("held, and the queue does not admit a class the tenant may not use"))
	must.StrContains(t, p.Verdicts["ml/forged"].Reason, `may not use class "production"`)
}

// TestAudit8_ForgedQueueMetaEarnsNoPlace: a job registered straight to
// Nomad, stopped, with allot.state=queued and an old allot.queued-at is
// not in the queue at all (a user's stop), and a running one with forged
// requeue meta is direct and its forged values are not read.
func TestAudit8_ForgedQueueMetaEarnsNoPlace(t *testing.T) {
	stopped := gpuJob("stopped", 1, false)
	stopped.Stop = ptr(true)
	stopped.Meta = map[string]string{jobmeta.State: jobmeta.StateQueued, jobmeta.QueuedAt: "2000-01-01T00:00:00Z",
		jobmeta.PreemptedBy: "ml/blocker", jobmeta.RequeuedAt: testNow().Format(time.RFC3339)}
	running := gpuJob("running", 1, false)
	running.Meta = map[string]string{jobmeta.QueuedAt: "2000-01-01T00:00:00Z", jobmeta.PreemptedBy: "ml/blocker", jobmeta.Requeues: "7"}
	r, _ := newReconciler(t, stopped, running, gpuJob("blocker", 1, true))
	p := r.Cycle(context.Background())
	must.SliceEmpty(t, p.Queue, must.Sprint("nothing waits"))
	for _, d := range p.Decisions {
		must.NotEq(t, "stopped", d.JobID, must.Sprint("a forged held job is never admitted"))
	}
	j, _ := r.Store.Job("ml", "stopped")
	must.Eq(t, engine.Stopped, j.State)
	j, _ = r.Store.Job("ml", "running")
	must.Eq(t, engine.Direct, j.State)
	must.True(t, j.QueuedAt.IsZero())
	must.Eq(t, "", j.PreemptedBy)
	must.Eq(t, 0, j.Requeues)
}

// TestAudit22_GangTimeoutMeasuresOnlySealedAdmissions: Nomad's revert
// brings back an old version's allot.admitted-at (hours ago) with a new
// SubmitTime. Its allocations still pending, the job is not requeued by
// the gang timeout: the record is stale, so the job is direct. The control
// job, sealed by a genuine admission hours ago, is.
func TestAudit22_GangTimeoutMeasuresOnlySealedAdmissions(t *testing.T) {
	longAgo := testNow().Add(-3 * time.Hour)
	admitted := func(id string, storedAt time.Time) *api.Job {
		j := gpuJob(id, 1, false)
		must.NoError(t, testSealer.Admit(j, jobmeta.Record{}, jobmeta.Stamp{Now: longAgo}))
		j.SubmitTime = ptr(storedAt.UnixNano())
		return j
	}
	reverted, genuine := admitted("reverted", testNow().Add(-time.Second)), admitted("genuine", longAgo)
	r, _ := newReconciler(t, reverted, genuine)
	r.Config.GangTimeout = 10 * time.Minute
	pending := func(id string) *api.Allocation {
		return &api.Allocation{ID: id + "-0", Namespace: "ml", JobID: id, TaskGroup: "g", NodeID: "n1",
			DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusPending, CreateIndex: 4}
	}
	r.Store.Reset(&cluster.Initial{Nodes: []*api.Node{testNode()}, Jobs: []*api.Job{reverted, genuine},
		Allocs: []*api.Allocation{pending("reverted"), pending("genuine")}})
	p := r.Cycle(context.Background())
	var requeued []string
	for _, d := range p.Decisions {
		if d.Action == engine.Requeue {
			requeued = append(requeued, d.JobID)
		}
	}
	must.Eq(t, []string{"genuine"}, requeued)
	j, _ := r.Store.Job("ml", "reverted")
	must.Eq(t, engine.Direct, j.State)
}
