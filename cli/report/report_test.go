package report_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/cli/app"
	"github.com/allot-sh/allot/cli/report"
	"github.com/allot-sh/allot/governor/ledger"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func alloc(id, ns, job, model string, n int, start, end int) *api.AllocationListStub {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = id + "-dev"
	}
	return &api.AllocationListStub{ID: id, Namespace: ns, JobID: job, NodeID: "n1", ClientStatus: "complete",
		DesiredStatus: "run", TaskStates: map[string]*api.TaskState{"t": {State: "dead",
			StartedAt: t0.Add(time.Duration(start) * time.Second), FinishedAt: t0.Add(time.Duration(end) * time.Second)}},
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": {
			Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: model, DeviceIDs: ids}}}}}}
}

// fakeGovernor serves the ledger's API over a seeded SQLite ledger for a
// management caller.
func fakeGovernor(t *testing.T) (string, *ledger.DB) {
	ctx := context.Background()
	db, err := ledger.Open(ctx, ledger.DriverSQLite, filepath.Join(t.TempDir(), "l.db"))
	must.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	pool := ledger.Context{NodePool: func(string) string { return "gpu" }}
	var segs []ledger.Segment
	for _, a := range []*api.AllocationListStub{alloc("a1", "ml", "train", "H200", 2, 0, 3600),
		alloc("a2", "cv", "eval", "H200", 1, 0, 1800)} {
		segs = append(segs, ledger.Segments(a, pool, t0.Add(time.Hour))...)
	}
	must.NoError(t, db.Ingest(ctx, segs, 1))
	inst := []*api.NodeDevice{{ID: "1", Healthy: true}, {ID: "2", Healthy: true}, {ID: "3", Healthy: true}, {ID: "4", Healthy: true}}
	nodes := []*api.NodeListStub{{ID: "n1", NodePool: "gpu", Status: "ready", NodeResources: &api.NodeResources{
		Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H200", Instances: inst}}}}}
	for _, at := range []time.Time{t0, t0.Add(time.Hour)} {
		must.NoError(t, db.SampleCapacity(ctx, ledger.Inventory(nodes, nil), at))
	}
	must.NoError(t, db.Append(ctx, ledger.Entry{Time: t0, Kind: ledger.KindNamespaceMeta, Actor: "acc-1", ActorName: "alice",
		Namespace: "ml", Subject: "allot.quota.gpu", Old: "allot.quota.gpu=\"2\"\n", New: "allot.quota.gpu=\"4\"\n"}))
	a := &ledger.API{DB: db, Rates: ledger.Rates{Currency: "EUR", Devices: map[string]float64{"nvidia/gpu/H200": 2}}}
	mux := http.NewServeMux()
	for _, kind := range []string{"usage", "cost", "capacity", "audit"} {
		kind := kind
		mux.HandleFunc("/allot/v1/"+kind, func(w http.ResponseWriter, r *http.Request) {
			a.Serve(kind, w, r, ledger.Caller{Management: true})
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, db
}

func run(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := app.Run(context.Background(), append([]string{"allotctl"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestReportCommands(t *testing.T) {
	addr, _ := fakeGovernor(t)
	window := []string{"-address", addr, "-since", "2026-11-01", "-until", "2026-11-02"}
	tests := map[string]struct {
		args []string
		want []string
	}{
		"usage by tenant csv": {args: []string{"report", "usage", "-by", "tenant", "-csv"}, want: []string{
			"Tenant,Allocs,Device-h,Used device-h", "cv,1,0.500,-", "ml,1,2.000,-"}},
		"usage by job": {args: []string{"report", "usage", "-by", "job"}, want: []string{"Tenant", "ml  ", "train"}},
		"cost": {args: []string{"report", "cost"}, want: []string{"ml 2.00 4.00 0.00 0.00% 0.00 EUR",
			"(idle) gpu nvidia/gpu/H200 1.50 3.00", "TOTAL 8.00 EUR"}},
		"capacity": {args: []string{"report", "capacity"}, want: []string{"gpu nvidia/gpu/H200 4.00 2.50 1.50 0.00 0.00 0.00 62.50%"}},
		"audit":    {args: []string{"audit"}, want: []string{"namespace-meta", "acc-1 (alice)", `allot.quota.gpu="4"`}},
		"verify":   {args: []string{"audit", "-verify"}, want: []string{"Chain verified: 1 entries"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := run(append(tc.args, window...)...)
			must.Zero(t, code, must.Sprint(errOut))
			flat := collapse(out)
			for _, w := range tc.want {
				must.StrContains(t, flat, collapse(w))
			}
		})
	}
}

// collapse turns every run of spaces into one, so checks do not depend on
// column widths.
func collapse(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func TestAuditVerifyFailsOnTampering(t *testing.T) {
	addr, db := fakeGovernor(t)
	_, err := db.SQL().Exec(`UPDATE audit SET actor = 'mallory'`)
	must.NoError(t, err)
	code, _, errOut := run("audit", "-verify", "-address", addr)
	must.Eq(t, 3, code)
	must.StrContains(t, errOut, "entry 1 was changed")
}

func TestBadWindow(t *testing.T) {
	code, _, errOut := run("report", "usage", "-since", "yesterday-ish", "-address", "http://127.0.0.1:1")
	must.Eq(t, 2, code)
	must.StrContains(t, errOut, "neither RFC 3339")
}

func TestParseTime(t *testing.T) {
	now := t0.Add(48 * time.Hour)
	for in, want := range map[string]time.Time{"24h": t0.Add(24 * time.Hour), "2026-11-01": t0,
		"2026-11-01T06:00:00Z": t0.Add(6 * time.Hour)} {
		got, err := report.ParseTime(in, now)
		must.NoError(t, err)
		must.Eq(t, want, got)
	}
	_, err := report.ParseTime("soon", now)
	must.True(t, err != nil && strings.Contains(err.Error(), "soon"))
}
