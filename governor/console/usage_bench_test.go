package console_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/server"
)

// ledgerSize is how much a month of ledger holds.
type ledgerSize struct {
	segments int           // allocations over 30 days, 20 tenants
	audit    int           // audit entries
	every    time.Duration // between capacity samples
}

// benchLedger is a month of a busy cluster (BenchmarkReportPages); the
// test renders a smaller one (the race detector makes the big one slow).
var (
	benchLedger = ledgerSize{segments: 10000, audit: 10000, every: time.Hour}
	testLedger  = ledgerSize{segments: 1000, audit: 1000, every: 12 * time.Hour}
)

// bigLedgerGovernor is the real server over a SQLite ledger holding
// size.segments segments of 20 namespaces spread over the 30 days before
// now, capacity samples of three pools every size.every, and size.audit
// audit entries.
func bigLedgerGovernor(tb testing.TB, now time.Time, size ledgerSize) http.Handler {
	ctx := context.Background()
	db, err := ledger.Open(ctx, ledger.DriverSQLite, filepath.Join(tb.TempDir(), "ledger.db"))
	must.NoError(tb, err)
	tb.Cleanup(func() { db.Close() })
	month := 30 * 24 * time.Hour
	pools := []string{"default", "h200", "l4"}
	segs := make([]ledger.Segment, 0, size.segments)
	for i := 0; i < size.segments; i++ {
		start := now.Add(-month + time.Duration(i)*(month/time.Duration(size.segments)))
		segs = append(segs, ledger.Segment{AllocID: fmt.Sprintf("alloc-%05d", i), Model: "nvidia/gpu/H200",
			Namespace: fmt.Sprintf("team-%02d", i%20), JobID: fmt.Sprintf("train-%05d", i), TaskGroup: "g", Class: "standard",
			NodePool: pools[i%3], NodeID: "n", NodeName: "gpu", Devices: int64(1 + i%8), Queued: start.Add(-time.Minute),
			Start: start, End: start.Add(time.Duration(1+i%5) * time.Hour), Outcome: ledger.OutcomeComplete, ModifyIndex: uint64(i + 1)})
	}
	must.NoError(tb, db.Ingest(ctx, segs, uint64(size.segments)))
	for at := now.Add(-month); !at.After(now); at = at.Add(size.every) {
		h := int(now.Sub(at) / size.every)
		var stock []ledger.Stock
		for i, p := range pools {
			stock = append(stock, ledger.Stock{PoolModel: ledger.PoolModel{Pool: p, Model: "nvidia/gpu/H200"},
				Total: 64, Down: int64(h % 3), Waiting: int64((h + i) % 7)})
		}
		must.NoError(tb, db.SampleCapacity(ctx, stock, at))
	}
	entries := make([]ledger.Entry, 0, size.audit)
	for i := 0; i < size.audit; i++ {
		entries = append(entries, ledger.Entry{Time: now.Add(-month + time.Duration(i)*(month/time.Duration(size.audit))), Kind: ledger.KindNamespaceMeta,
			Actor: "acc", ActorName: "alice", Namespace: fmt.Sprintf("team-%02d", i%20), Subject: "allot.quota.gpu",
			Old: fmt.Sprintf("allot.quota.gpu=%q\n", fmt.Sprint(i)), New: fmt.Sprintf("allot.quota.gpu=%q\n", fmt.Sprint(i+1))})
	}
	must.NoError(tb, db.Append(ctx, entries...))

	_, store := teamStore(20)
	store.Reset(&cluster.Initial{})
	s := &server.Server{Plans: fixedPlan{&engine.Plan{Verdicts: map[string]*engine.Verdict{}}}, Store: store, Proxy: newFakeNomad(),
		Auth: fakeAuth{t: tb}, Log: hclog.NewNullLogger(), Now: func() time.Time { return now },
		Ledger: &ledger.API{DB: db, Rates: ledger.Rates{Currency: "EUR", Devices: map[string]float64{"nvidia/gpu/H200": 4}}}}
	return s.Handler()
}

// reportPages are the pages BenchmarkReportPages renders.
var reportPages = []string{"/ui/usage?window=30d&by=tenant", "/ui/usage?window=30d&by=pool", "/ui/capacity?window=30d",
	"/ui/audit?window=30d", "/ui/audit?window=30d&tenant=team-07", "/ui/audit"}

// TestBigReportPages checks what BenchmarkReportPages renders, on a
// tenth of its ledger.
func TestBigReportPages(t *testing.T) {
	h := bigLedgerGovernor(t, time.Now().UTC(), testLedger)
	ck := handlerSession(t, h, "root")
	want := map[string][]string{
		reportPages[0]: {"<td>team-19</td>", `id="cost-table"`},
		reportPages[1]: {"<td>h200</td>", "<td>l4</td>"},
		reportPages[2]: {"<td>h200</td><td>nvidia/gpu/H200</td>", `id="shortest"`},
		reportPages[3]: {"200 entries, newest first", "Only the newest 200 are shown"},
		reportPages[4]: {"50 entries, newest first"},
		reportPages[5]: {"33 entries, newest first"}, // the default window, 24 hours
	}
	for _, path := range reportPages {
		rec := getPage(h, ck, path)
		must.Eq(t, http.StatusOK, rec.Code, must.Sprint(path))
		for _, s := range want[path] {
			must.StrContains(t, rec.Body.String(), s, must.Sprint(path))
		}
		if path == reportPages[3] {
			body := rec.Body.String()
			must.Eq(t, 200, strings.Count(body, "<tr data-seq="), must.Sprint("the newest 200 are shown"))
			must.StrContains(t, body, `<tr data-seq="1000">`)
			must.StrNotContains(t, withoutTokens(body), `<tr data-seq="800">`)
		}
		if path == reportPages[4] {
			must.Eq(t, 50, strings.Count(rec.Body.String(), "<td>team-07</td>"))
			must.Eq(t, 50, strings.Count(rec.Body.String(), "<td>team-"), must.Sprint("the tenant filter"))
			must.StrNotContains(t, rec.Body.String(), "Only the newest")
		}
	}
}

// BenchmarkReportPages measures the server time of the usage, capacity
// and audit views over a month of a busy ledger (10,000 allocations,
// hourly capacity samples, 10,000 audit entries), signed in as an
// operator; it reports the p95 of its iterations as p95-ms.
func BenchmarkReportPages(b *testing.B) {
	for _, path := range reportPages {
		b.Run(strings.TrimPrefix(path, "/ui/"), func(b *testing.B) {
			h := bigLedgerGovernor(b, time.Now().UTC(), benchLedger)
			ck := handlerSession(b, h, "root")
			benchPage(b, h, ck, path)
		})
	}
}
