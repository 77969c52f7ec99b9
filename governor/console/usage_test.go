package console_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/quota"
	"github.com/allot-sh/allot/governor/server"
)

// fakeIdle answers /allot/v1/idle as governor/idle.Service does: only
// the namespaces the caller may read, zombies for management only.
type fakeIdle struct{ a allotapi.IdleAnswer }

func (f fakeIdle) Answer(canRead func(string) bool, management bool) allotapi.IdleAnswer {
	out := allotapi.IdleAnswer{Period: f.a.Period, Watched: f.a.Watched}
	for _, c := range f.a.Candidates {
		if canRead(c.Namespace) {
			out.Candidates = append(out.Candidates, c)
		}
	}
	for _, p := range f.a.Policies {
		if canRead(p.Namespace) {
			out.Policies = append(out.Policies, p)
		}
	}
	if management {
		out.Zombies = f.a.Zombies
	}
	return out
}

// reportNow is the clock of the report governor: its ledger holds use
// in the two hours before it.
var reportNow = time.Now().UTC().Truncate(time.Second)

// newReportGovernor is newGovernor with a real SQLite ledger (segments of
// ml and secret, capacity samples, audit entries of both) and an idle
// service holding a candidate of each.
func newReportGovernor(t testing.TB) (*httptest.Server, *fakeNomad, *ledger.DB) {
	ctx := context.Background()
	db, err := ledger.Open(ctx, ledger.DriverSQLite, filepath.Join(t.TempDir(), "ledger.db"))
	must.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	h200 := "nvidia/gpu/H200"
	seg := func(alloc, ns, job string, devices int64, start, end time.Duration) ledger.Segment {
		return ledger.Segment{AllocID: alloc, Model: h200, Namespace: ns, JobID: job, TaskGroup: "g", Class: "standard",
			NodePool: "gpu", NodeID: "n1", NodeName: "gpu-1", Devices: devices, CPUMHz: 1000, MemoryMB: 1024,
			Queued: reportNow.Add(-start - time.Minute), Start: reportNow.Add(-start), End: reportNow.Add(-end),
			Outcome: ledger.OutcomeComplete, ModifyIndex: 5}
	}
	must.NoError(t, db.Ingest(ctx, []ledger.Segment{
		seg("a1", "ml", "train", 2, 2*time.Hour, time.Hour),
		seg("a2", "secret", "x", 1, 150*time.Minute, 120*time.Minute),
	}, 5))
	stock := []ledger.Stock{{PoolModel: ledger.PoolModel{Pool: "gpu", Model: h200}, Total: 8, Down: 1, Waiting: 4}}
	must.NoError(t, db.SampleCapacity(ctx, stock, reportNow.Add(-3*time.Hour)))
	must.NoError(t, db.SampleCapacity(ctx, stock, reportNow))
	must.NoError(t, db.Append(ctx,
		ledger.Entry{Time: reportNow.Add(-time.Hour), Kind: ledger.KindNamespaceMeta, Actor: "acc-1", ActorName: "alice",
			Namespace: "ml", Subject: "allot.quota.gpu", Old: "allot.limit.gpu=\"8\"\nallot.quota.gpu=\"4\"\n",
			New: "allot.limit.gpu=\"8\"\nallot.quota.gpu=\"6\"\n", Detail: "through the governor"},
		ledger.Entry{Time: reportNow.Add(-time.Hour), Kind: ledger.KindNamespaceMeta, Actor: "acc-2", ActorName: "bob",
			Namespace: "secret", Subject: "allot.quota.gpu", New: "allot.quota.gpu=\"2\"\n", Detail: "through the governor " + strings.Repeat("x", 100)}))

	store := cluster.NewStore(quota.NewBook([]string{"low", "standard", "high"}), nil)
	store.SetNamespaces([]*api.Namespace{{Name: "ml"}, {Name: "secret"}})
	store.Reset(&cluster.Initial{})
	fn := newFakeNomad()
	sample := func(min int, util float64, known bool) allotapi.IdleSample {
		return allotapi.IdleSample{At: reportNow.Add(time.Duration(min) * time.Minute), Known: known, UtilPct: util, MemoryMiB: 30000, Processes: 1}
	}
	idle := allotapi.IdleAnswer{Period: time.Minute, Watched: 3,
		Candidates: []allotapi.IdleCandidate{
			{Namespace: "ml", JobID: "notebook", AllocID: "0123456789abcdef", Devices: 1, Class: "idle-held", Step: "warned",
				IdleSince: reportNow.Add(-20 * time.Minute), DueAt: reportNow.Add(10 * time.Minute), Action: "checkpoint",
				IdleDeviceSeconds: 1200, Samples: []allotapi.IdleSample{sample(-3, 0, true), sample(-2, 1, true), sample(-1, 0, false)}},
			{Namespace: "secret", JobID: "secret-notebook", AllocID: "fedcba9876543210", Devices: 2, Class: "idle-held", Step: "suspect"},
		},
		Zombies: []allotapi.IdleZombie{{Node: "gpu-1", DeviceID: "GPU-zombie", MemoryMiB: 500}},
		Policies: []allotapi.IdlePolicy{
			{Namespace: "ml", Window: 10 * time.Minute, ThresholdPct: 5, Grace: 5 * time.Minute, Action: "checkpoint",
				Exemptions: map[string]allotapi.IdleExemption{"debug": {Until: reportNow.Add(time.Hour), Reason: "interactive debugging"}}},
			{Namespace: "secret", Window: 10 * time.Minute, ThresholdPct: 5, Grace: 5 * time.Minute, Action: "checkpoint",
				Exemptions: map[string]allotapi.IdleExemption{"hidden": {Until: reportNow.Add(time.Hour), Reason: "secret reason"}}},
		}}
	s := &server.Server{Plans: fixedPlan{testPlan()}, Store: store, Proxy: fn, Auth: fakeAuth{t: t},
		Log: hclog.NewNullLogger(), Classes: map[string]engine.Class{"low": {Priority: 30}, "standard": {Priority: 50}, "high": {Priority: 70}},
		Ledger: &ledger.API{DB: db, Rates: ledger.Rates{Currency: "USD", Devices: map[string]float64{h200: 4}}},
		Idle:   fakeIdle{idle}}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, fn, db
}

// csvLink finds the page's CSV export link.
func csvLink(t *testing.T, body string) string {
	i := strings.Index(body, `href="/ui/usage.csv?`)
	must.Positive(t, i, must.Sprint("no CSV link on the usage page"))
	rest := body[i+len(`href="`):]
	link := rest[:strings.IndexByte(rest, '"')]
	return strings.ReplaceAll(link, "&amp;", "&")
}

func TestUsageViewAndCSVMatchAllotctl(t *testing.T) {
	srv, _, _ := newReportGovernor(t)
	cases := map[string]struct {
		token          string
		want, wantNot  []string
		wantCSVTenants []string
	}{
		"management sees every tenant": {token: "root", want: []string{"ml", "secret"}, wantCSVTenants: []string{"ml", "secret"}},
		"a tenant sees only its own":   {token: "ml", want: []string{"ml"}, wantNot: []string{"secret"}, wantCSVTenants: []string{"ml"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBrowser(t, srv)
			b.signIn(tc.token)
			status, body, _ := b.get("/ui/usage?window=24h&by=tenant")
			must.Eq(t, http.StatusOK, status)
			must.StrContains(t, body, `<html lang="en">`)
			must.StrContains(t, body, `id="usage-table"`)
			must.StrContains(t, body, "<td>2.000</td>", must.Sprint("ml held 2 devices for an hour"))
			for _, w := range tc.want {
				must.StrContains(t, body, "<td>"+w+"</td>")
			}
			for _, w := range tc.wantNot {
				must.StrNotContains(t, withoutTokens(body), w)
			}
			link := csvLink(t, body)
			status, got, resp := b.get(link)
			must.Eq(t, http.StatusOK, status)
			must.StrHasPrefix(t, "text/csv", resp.Header.Get("Content-Type"))

			// What allotctl report usage -csv prints for the same window:
			// the API's answer through the table the CLI prints
			// (ledger.UsageTable).
			u, err := url.Parse(link)
			must.NoError(t, err)
			var ua ledger.UsageAnswer
			apiGet(t, srv, tc.token, "/allot/v1/usage?"+u.RawQuery, &ua)
			header, rows := ledger.UsageTable(ua)
			var want strings.Builder
			w := csv.NewWriter(&want)
			must.NoError(t, w.Write(header))
			must.NoError(t, w.WriteAll(rows))
			must.Eq(t, want.String(), got)
			records, err := csv.NewReader(strings.NewReader(got)).ReadAll()
			must.NoError(t, err)
			var tenants []string
			for _, r := range records[1:] {
				tenants = append(tenants, r[0])
			}
			must.SliceContainsAll(t, tc.wantCSVTenants, tenants)
		})
	}
}

func TestUsageViewGroupsAndPrices(t *testing.T) {
	srv, _, _ := newReportGovernor(t)
	b := newBrowser(t, srv)
	b.signIn("root")
	status, body, _ := b.get("/ui/usage?window=24h&by=model")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, "<td>nvidia/gpu/H200</td>")
	must.StrContains(t, body, `id="cost-table"`)
	must.StrContains(t, body, "Total (USD)")
	// 2.5 device-hours (ml 2 × 1h, secret 1 × 30m) at 4 USD.
	must.StrContains(t, body, `<td class="num">2.500</td>`)
	must.StrContains(t, body, `<td class="num">10.00</td>`)
	must.StrContains(t, body, `role="img"`)
	// An unknown grouping falls back to tenants, a bad window to 24h.
	status, body, _ = b.get("/ui/usage?window=bogus&by=secret")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, `<option value="24h" selected>`)
	must.StrContains(t, body, `<option value="tenant" selected>`)
}

// apiGet reads the governor's API with a token.
func apiGet(t *testing.T, srv *httptest.Server, token, path string, out any) {
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	must.NoError(t, err)
	req.Header.Set("X-Nomad-Token", token)
	resp, err := srv.Client().Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode)
	must.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}
