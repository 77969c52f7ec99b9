package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/quota"
)

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
			{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "secret"}, Err: errBadMeta}, Queued: 1},
		}}
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
	must.Eq(t, []allotapi.QueueEntry{{Namespace: "ml", JobID: "big.Job_1", Class: "standard", Position: 1, TenantPosition: 1,
		Reason: "limit: needs 4 gpu; tenant ml uses 8 of limit 8", ReasonCheck: &limitFails}}, q.Jobs)
	_, err = c.Why(ctx, "secret", "x")
	must.ErrorContains(t, err, "status 403")
	must.ErrorContains(t, err, "Permission denied")
	c.Token = "denied"
	_, err = c.Tenants(ctx)
	must.ErrorContains(t, err, "ACL token not found")
}

// TestAudit16_APIRefusesWithoutToken: audit #16/#27, with ACLs on an
// anonymous caller (no anonymous policy) gets nothing from any endpoint,
// not even empty lists, and a hidden job answers exactly like a missing
// one.
func TestAudit16_APIRefusesWithoutToken(t *testing.T) {
	_, srv := testServer(t, samplePlan(), true, nil)
	for _, path := range []string{"/allot/v1/tenants", "/allot/v1/queue", "/allot/v1/decisions", "/allot/v1/classes",
		"/allot/v1/jobs/ml/big.Job_1/why", "/allot/v1/jobs/secret/x/why", "/metrics"} {
		t.Run(path, func(t *testing.T) {
			resp, err := http.Get(srv.URL + path)
			must.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			must.Eq(t, http.StatusForbidden, resp.StatusCode)
			must.StrContains(t, string(body), "Permission denied")
			must.StrNotContains(t, string(body), "secret")
			must.StrNotContains(t, string(body), "gpu")
		})
	}
	for _, id := range []string{"x", "no-such-job"} {
		code, body := get(t, srv.URL+"/allot/v1/jobs/secret/"+id+"/why", "ml")
		must.Eq(t, http.StatusForbidden, code)
		must.Eq(t, `{"Error":"Permission denied"}`, strings.TrimSpace(body))
	}
}

func TestWhyShowsEveryCheckWithNumbers(t *testing.T) {
	c := newServer(t, samplePlan(), true)
	w, err := c.Why(context.Background(), "ml", "big.Job_1")
	must.NoError(t, err)
	must.Eq(t, "queued", w.State)
	must.Eq(t, []allotapi.Check{{Name: "class", OK: true, Detail: "class standard (priority 50)"}, limitFails}, w.Checks)
	must.Eq(t, &limitFails, w.ReasonCheck)
}

// limitFails is samplePlan's failing check as the API gives it: the text
// as before, plus its structured numbers.
var limitFails = allotapi.Check{Name: "limit", Detail: "needs 4 gpu; tenant ml uses 8 of limit 8", Tenant: "ml",
	Amounts: []allotapi.Amount{{Resource: "gpu", Need: 4, Used: 8, Cap: 8, Borrowable: -1, Over: true}}}

func TestHealth(t *testing.T) {
	must.Error(t, newServer(t, nil, false).Healthy(context.Background()))
	must.Error(t, newServer(t, nil, true).Healthy(context.Background()))
	must.NoError(t, newServer(t, samplePlan(), true).Healthy(context.Background()))
}

func TestACLsDisabledShowsEverything(t *testing.T) {
	c := newServer(t, samplePlan(), true)
	c.Token = "off"
	ts, err := c.Tenants(context.Background())
	must.NoError(t, err)
	must.SliceLen(t, 2, ts.Tenants)
	must.Eq(t, "bad meta", ts.Tenants[1].Error)
}

// get GETs url with token and returns the status and body.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	must.NoError(t, err)
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return resp.StatusCode, string(body)
}

// The governor computes borrowing and each queued job's request; the CLI
// only renders them.
func TestAPIServesLendingAndRequests(t *testing.T) {
	p := samplePlan()
	p.Tenants = append(p.Tenants, engine.TenantStatus{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "lender",
		Cohort: "default", Weight: 1, Quota: quota.Vector{"gpu": 8}}}, Usage: quota.Vector{}})
	s, srv := testServer(t, p, true, nil)
	s.Store.PutEngineJob(&engine.Job{Namespace: "ml", ID: "big.Job_1", Groups: []engine.Group{
		{Name: "g", Count: 2, CPU: 100, MemoryMB: 64, Devices: []engine.DeviceRequest{{Name: "nvidia/gpu", Count: 2}}}}})
	c := &allotapi.Client{Address: srv.URL, Token: "root"}
	ctx := context.Background()
	ts, err := c.Tenants(ctx)
	must.NoError(t, err)
	byNS := map[string]allotapi.Tenant{}
	for _, tn := range ts.Tenants {
		byNS[tn.Namespace] = tn
	}
	must.Eq(t, map[string]int64{"gpu": 8}, byNS["ml"].Borrowed, must.Sprint("limit only: all usage is borrowed"))
	must.Eq(t, map[string]int64{"gpu": 8}, byNS["lender"].Lent)
	must.MapEmpty(t, byNS["lender"].Borrowed)
	q, err := c.Queue(ctx)
	must.NoError(t, err)
	must.Eq(t, map[string]int64{"cpu": 200, "memory": 128, "gpu": 4}, q.Jobs[0].Request, must.Sprint("as the engine accounts it"))
	must.Nil(t, q.Jobs[1].Request, must.Sprint("a job the store does not have"))
}
