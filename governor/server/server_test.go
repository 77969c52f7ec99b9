package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	gapi "github.com/allot-sh/allot/governor/api"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/quota"
)

type fixedPlan struct{ p *engine.Plan }

func (f fixedPlan) Latest() *engine.Plan               { return f.p }
func (f fixedPlan) Cycle(context.Context) *engine.Plan { return f.p }

func samplePlan() *engine.Plan {
	queued := engine.Verdict{Namespace: "ml", JobID: "big.Job_1", Class: "standard", State: engine.Queued, Position: 1, TenantPosition: 1,
		Reason: "limit: needs 4 gpu; tenant ml uses 8 of limit 8",
		Checks: []engine.Check{{Name: "class", OK: true, Detail: "class standard (priority 50)"},
			{Name: "limit", Tenant: "ml", Amounts: []engine.Amount{{Resource: "gpu", Need: 4, Used: 8, Cap: 8, Borrowable: -1, Over: true}}}}}
	other := engine.Verdict{Namespace: "secret", JobID: "x", State: engine.Queued, Position: 2, TenantPosition: 1, Reason: "fit: none"}
	return &engine.Plan{Queue: []engine.Verdict{queued, other},
		Verdicts: map[string]*engine.Verdict{"ml/big.Job_1": &queued, "secret/x": &other},
		Tenants: []engine.TenantStatus{
			{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "ml", Cohort: "default", Weight: 1, Limit: quota.Vector{"gpu": 8}}}, Usage: quota.Vector{"gpu": 8}, Queued: 1},
			{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "secret"}, Err: errors.New("bad meta")}, Queued: 1},
		}}
}

// onlyML is a token that may read namespace ml only.
func onlyML(r *http.Request) (map[string]bool, error) {
	if r.Header.Get("X-Nomad-Token") == "denied" {
		return nil, errors.New("ACL token not found")
	}
	return map[string]bool{"ml": true}, nil
}

func newServer(t *testing.T, p *engine.Plan, synced bool) *gapi.Client {
	store := cluster.NewStore(nil, nil)
	if synced {
		store.Reset(&cluster.Initial{})
	}
	s := &Server{Plans: fixedPlan{p}, Store: store, Proxy: http.NotFoundHandler(), Metrics: metrics.New(),
		Visible: onlyML, Log: hclog.NewNullLogger()}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &gapi.Client{Address: srv.URL}
}

func TestAPIShowsOnlyReadableNamespaces(t *testing.T) {
	c := newServer(t, samplePlan(), true)
	ctx := context.Background()
	ts, err := c.Tenants(ctx)
	must.NoError(t, err)
	must.SliceLen(t, 1, ts.Tenants)
	must.Eq(t, "ml", ts.Tenants[0].Namespace)
	q, err := c.Queue(ctx)
	must.NoError(t, err)
	must.Eq(t, 2, q.Total)
	must.Eq(t, []gapi.QueueEntry{{Namespace: "ml", JobID: "big.Job_1", Class: "standard", Position: 1, TenantPosition: 1,
		Reason: "limit: needs 4 gpu; tenant ml uses 8 of limit 8"}}, q.Jobs)
	_, err = c.Why(ctx, "secret", "x")
	must.ErrorIs(t, err, gapi.ErrNotFound)
	c.Token = "denied"
	_, err = c.Tenants(ctx)
	must.ErrorContains(t, err, "ACL token not found")
}

func TestWhyShowsEveryCheckWithNumbers(t *testing.T) {
	c := newServer(t, samplePlan(), true)
	w, err := c.Why(context.Background(), "ml", "big.Job_1")
	must.NoError(t, err)
	must.Eq(t, "queued", w.State)
	must.Eq(t, []gapi.Check{{Name: "class", OK: true, Detail: "class standard (priority 50)"},
		{Name: "limit", Detail: "needs 4 gpu; tenant ml uses 8 of limit 8"}}, w.Checks)
}

func TestHealth(t *testing.T) {
	must.Error(t, newServer(t, nil, false).Healthy(context.Background()))
	must.Error(t, newServer(t, nil, true).Healthy(context.Background()))
	must.NoError(t, newServer(t, samplePlan(), true).Healthy(context.Background()))
}

func TestNomadVisibleUsesCallerToken(t *testing.T) {
	var got string
	nomad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("X-Nomad-Token")
		_, _ = w.Write([]byte(`[{"Name":"ml"},{"Name":"web"}]`))
	}))
	defer nomad.Close()
	target, _ := http.NewRequest("GET", nomad.URL, nil)
	vis := NomadVisible(target.URL, &http.Client{Timeout: 5 * time.Second})
	req := httptest.NewRequest("GET", "/allot/v1/queue", nil)
	req.Header.Set("X-Nomad-Token", "caller")
	ns, err := vis(req)
	must.NoError(t, err)
	must.Eq(t, map[string]bool{"ml": true, "web": true}, ns)
	must.Eq(t, "caller", got)
}
