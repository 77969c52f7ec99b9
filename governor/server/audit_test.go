package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/reconcile"
)

// countingPlans counts how often the latest plan is read; the server has
// no way to run a cycle at all (Plans has no Cycle).
type countingPlans struct {
	p     *engine.Plan
	reads int
}

func (c *countingPlans) Latest() *engine.Plan { c.reads++; return c.p }

// TestAudit15_WhyDecidesWithoutACycle: audit #15. A job submitted after
// the latest cycle is explained by deciding that job alone against a
// fresh snapshot: nothing is actuated, the plan is not replaced, the
// store is not touched, and a hidden namespace is refused before the job
// is even looked up.
func TestAudit15_WhyDecidesWithoutACycle(t *testing.T) {
	plans := &countingPlans{p: samplePlan()}
	s, srv := testServer(t, nil, true, func(s *Server) {
		s.Plans = plans
		s.Engine = engine.Config{Classes: map[string]engine.Class{"standard": {Priority: 50, Preemptible: true}}}
		s.Now = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	})
	s.Store.SetNamespaces([]*api.Namespace{{Name: "ml", Meta: map[string]string{"allot.limit.gpu": "8"}}, {Name: "secret"}})
	fresh := &engine.Job{Namespace: "ml", ID: "fresh", State: engine.Queued,
		Groups: []engine.Group{{Name: "g", Count: 1, Devices: []engine.DeviceRequest{{Name: "nvidia/gpu", Count: 2}}}}}
	s.Store.PutEngineJob(fresh)
	gen := s.Store.Gen()
	before, _ := s.Store.Job("ml", "fresh")
	kept := *before

	c := &allotapi.Client{Address: srv.URL, Token: "ml"}
	w, err := c.Why(context.Background(), "ml", "fresh")
	must.NoError(t, err)
	must.Eq(t, "queued", w.State)
	must.Eq(t, "standard", w.Class)
	must.Eq(t, "quota: needs 2 gpu; tenant ml uses 0 of quota 0 and cohort default can lend 0 more, more than it could ever get (quota plus all the cohort could lend): change the job or the quota", w.Reason)
	must.Eq(t, 2, w.Position, must.Sprint("behind ml/big.Job_1 of the latest plan"))
	must.Eq(t, gen, s.Store.Gen(), must.Sprint("a GET changes nothing in the store"))
	stored, _ := s.Store.Job("ml", "fresh")
	must.Eq(t, kept, *stored, must.Sprint("the stored job is not touched"))
	must.Eq(t, engine.Queued, stored.State)
	must.Eq(t, samplePlan().Queue, plans.p.Queue, must.Sprint("the plan is not replaced"))

	reads := plans.reads
	code, _ := get(t, srv.URL+"/allot/v1/jobs/secret/x/why", "ml")
	must.Eq(t, http.StatusForbidden, code)
	must.Eq(t, reads, plans.reads, must.Sprint("refused before the plan is read"))
}

// TestAudit27_DecisionsHideNamespaceAndClass: audit #27, a record the
// caller sees because of its own victim hides the preemptor's namespace,
// job, class and reason.
func TestAudit27_DecisionsHideNamespaceAndClass(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	j := &reconcile.Journal{}
	j.Add(reconcile.Record{Time: at, Kind: "preemption", Namespace: "secret", JobID: "boss", Class: "production", Cause: "reclaim",
		Reason: "tenant secret reclaims its nominal quota", Victims: []engine.Victim{
			{Namespace: "ml", JobID: "mine", Class: "low", LostWork: time.Minute},
			{Namespace: "secret", JobID: "other", Class: "low", LostWork: time.Hour},
		}})
	got, err := newDecisionServer(t, j).Decisions(context.Background())
	must.NoError(t, err)
	must.Eq(t, []allotapi.Decision{{Time: at, Kind: "preemption", Namespace: "(hidden)", JobID: "(hidden)", Cause: "reclaim",
		Reason: "(hidden)", Victims: []allotapi.Victim{{Namespace: "ml", JobID: "mine", Class: "low", LostWorkSeconds: 60},
			{Namespace: "(hidden)", JobID: "(hidden)"}}}}, got.Decisions)
}

// TestAudit27_QueueReasonsRedacted: the queue shows the caller's jobs
// only, with reasons that name no hidden job.
func TestAudit27_QueueReasonsRedacted(t *testing.T) {
	p := samplePlan()
	p.Queue[0].Reason = "order: waiting behind secret/x, which has waited 1h0m0s (longer than the starvation timeout 10m0s) and does not fit yet"
	q, err := newServer(t, p, true).Queue(context.Background())
	must.NoError(t, err)
	must.SliceLen(t, 1, q.Jobs)
	must.StrNotContains(t, q.Jobs[0].Reason, "secret")
	must.True(t, strings.HasPrefix(q.Jobs[0].Reason, "order: waiting behind (hidden), which"))
}
