//go:build e2e

package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/internal/pgtest"
	"github.com/allot-sh/allot/internal/testcluster"
)

// TestE2E_Ledger runs random jobs on a real cluster (3 clients, 2 GPU
// models in 2 pools) while governors are killed with SIGKILL, then checks
// each backend's ledger against Nomad's own task states.
func TestE2E_Ledger(t *testing.T) {
	began := time.Now()
	pg, pgErr := pgtest.Start()
	if pgErr != nil {
		t.Logf("!!! the PostgreSQL half of TestE2E_Ledger DOES NOT RUN: %v", pgErr)
	} else {
		t.Cleanup(pg.Stop)
	}
	e := newLedgerEnv(t)
	if pg != nil {
		e.startPostgresGovernor(pg)
	}
	mgmt := e.c.ManagementToken()
	sqliteDB := e.openSQLite()
	// A preemption by the governing governor (A), on an empty train pool.
	preempted := e.preempt(sqliteDB)
	// The short pool: seven jobs of two L4s each for its two L4s, all
	// long, in a tenant of its own cohort with quota to spare, so they
	// wait for devices (reserved-waiting), never for the quota that the
	// train workload uses up.
	for i := 0; i < 7; i++ {
		e.submitThrough(e.a, "team-c", fmt.Sprintf("infer%d", i), "infer", "L4", 2, 600, 0)
	}
	// Quota changes: through governor A (SQLite) and B (PostgreSQL) by
	// alice, and one straight to Nomad.
	code, _, errOut := e.allotctl(e.a, e.alice.SecretID, "quota", "set", "team-a", "-weight", "2")
	must.Zero(t, code, must.Sprint(errOut))
	if e.b != nil {
		code, _, errOut = e.allotctl(e.b, e.alice.SecretID, "quota", "set", "team-b", "-weight", "3")
		must.Zero(t, code, must.Sprint(errOut))
	}
	e.workload(75 * time.Second)
	e.setWeightDirectly("team-a", "5")
	workEnd := time.Now()
	e.drain()
	t.Logf("workload: %d jobs, %d user stops, %d governor kills (SIGKILL), %s", len(e.jobs), e.stopped, e.kills,
		workEnd.Sub(began).Round(time.Second))
	must.GreaterEq(t, 10, e.kills)

	truth := e.groundTruth()
	backends := map[string]*ledger.DB{"sqlite": sqliteDB}
	if pg != nil {
		backends["postgres"] = e.openPostgres()
	}
	for name, db := range backends {
		t.Run(name, func(t *testing.T) {
			e.waitCaughtUp(t, db, truth)
			checkSegments(t, db, truth)
			checkTenantTotals(t, db)
			checkCapacity(t, db)
		})
	}
	checkDecisionsAndUsed(t, backends["sqlite"])
	// The governing backend still says preempted, by whom, after the
	// restarts and the victim job's removal.
	must.NoError(t, checkPreempted(sqliteDB, preempted))
	e.checkAuditThroughCLI(t, mgmt)
	if pg != nil {
		checkAuditRows(t, backends["postgres"], "team-b", "allot.weight", e.alice)
		checkTamper(t, backends["postgres"])
	}
	e.checkCapacityRanking(t, mgmt, began)
	e.checkMetrics(t, mgmt)
	t.Logf("TestE2E_Ledger wall time %s", time.Since(began).Round(time.Second))
}

// groundTruth is device-milliseconds per "alloc|model", from Nomad's task
// states: devices × (last FinishedAt − first StartedAt).
func (e *ledgerEnv) groundTruth() map[string]float64 {
	allocs, _, err := e.c.API.Allocations().List(&api.QueryOptions{Namespace: "*", Params: map[string]string{"resources": "true"}})
	must.NoError(e.t, err)
	out := map[string]float64{}
	for _, a := range allocs {
		var start, end time.Time
		for _, ts := range a.TaskStates {
			if ts.StartedAt.IsZero() {
				continue
			}
			if start.IsZero() || ts.StartedAt.Before(start) {
				start = ts.StartedAt
			}
			if ts.FinishedAt.After(end) {
				end = ts.FinishedAt
			}
		}
		if start.IsZero() || a.AllocatedResources == nil {
			continue
		}
		for _, tr := range a.AllocatedResources.Tasks {
			for _, d := range tr.Devices {
				out[a.ID+"|"+d.Vendor+"/"+d.Type+"/"+d.Name] += float64(len(d.DeviceIDs)) * end.Sub(start).Seconds()
			}
		}
	}
	must.Positive(e.t, len(out))
	return out
}

type row struct {
	devices, start, end, open int64
}

func segmentRows(db *ledger.DB) (map[string]row, error) {
	rows, err := db.SQL().Query(`SELECT alloc_id, model, devices, start_ms, end_ms, open FROM segments WHERE model <> ''`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]row{}
	for rows.Next() {
		var id, model string
		var r row
		if err := rows.Scan(&id, &model, &r.devices, &r.start, &r.end, &r.open); err != nil {
			return nil, err
		}
		out[id+"|"+model] = r
	}
	return out, rows.Err()
}

func (r row) seconds() float64 { return float64(r.devices*(r.end-r.start)) / 1000 }

// waitCaughtUp waits until the ledger holds every allocation, none open.
func (e *ledgerEnv) waitCaughtUp(t *testing.T, db *ledger.DB, truth map[string]float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err := testcluster.Poll(ctx, 250*time.Millisecond, func() error {
		got, err := segmentRows(db)
		if err != nil {
			return err
		}
		for k := range truth {
			r, ok := got[k]
			if !ok {
				return fmt.Errorf("no segment for %s", k)
			}
			if r.open == 1 {
				return fmt.Errorf("segment %s still open", k)
			}
		}
		return nil
	})
	must.NoError(t, err, must.Sprint("the ledger did not catch up with Nomad"))
}

// checkSegments: every allocation's device-seconds equal the ground truth
// within ±1 s; no segment is missing, extra or duplicated.
func checkSegments(t *testing.T, db *ledger.DB, truth map[string]float64) {
	got, err := segmentRows(db)
	must.NoError(t, err)
	worst := 0.0
	for k, want := range truth {
		d := math.Abs(got[k].seconds() - want)
		worst = math.Max(worst, d)
		must.LessEq(t, 1.0, d, must.Sprintf("allocation %s: ledger %.3f device-s, Nomad %.3f", k, got[k].seconds(), want))
	}
	must.Eq(t, len(truth), len(got), must.Sprint("segments with devices vs allocations that ran on devices"))
	var dups int
	must.NoError(t, db.SQL().QueryRow(`SELECT COUNT(*) FROM (SELECT alloc_id, model FROM segments
		GROUP BY alloc_id, model HAVING COUNT(*) > 1) d`).Scan(&dups))
	must.Zero(t, dups)
	var outcomes []string
	rows, err := db.SQL().Query(`SELECT outcome, COUNT(*) FROM segments GROUP BY outcome ORDER BY outcome`)
	must.NoError(t, err)
	for rows.Next() {
		var o string
		var n int
		must.NoError(t, rows.Scan(&o, &n))
		outcomes = append(outcomes, fmt.Sprintf("%s=%d", o, n))
	}
	rows.Close()
	t.Logf("%d device segments match Nomad (worst difference %.3f s); outcomes %s", len(truth), worst, strings.Join(outcomes, " "))
}

// checkTenantTotals: each tenant's total is exactly the sum of its rows.
func checkTenantTotals(t *testing.T, db *ledger.DB) {
	ctx := context.Background()
	q := ledger.Query{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Minute)}
	tenants, err := db.Usage(ctx, q)
	must.NoError(t, err)
	q.By = []string{"tenant", "job", "model"}
	rows, err := db.Usage(ctx, q)
	must.NoError(t, err)
	must.Len(t, 3, tenants)
	for _, tn := range tenants {
		var sum, n int64
		for _, r := range rows {
			if r.Key["tenant"] == tn.Key["tenant"] {
				sum += r.DeviceMS
				n++
			}
		}
		must.Eq(t, tn.DeviceMS, sum, must.Sprintf("tenant %s", tn.Key["tenant"]))
		t.Logf("tenant %s: %.1f GPU-seconds over %d job/model rows, %d failures, %d preemptions", tn.Key["tenant"],
			float64(sum)/1000, n, tn.Failures, tn.Preemptions)
	}
}

// checkCapacity: Allocated + Idle + Down = capacity × wall time (0.5 %).
func checkCapacity(t *testing.T, db *ledger.DB) {
	var from, to int64
	must.NoError(t, db.SQL().QueryRow(`SELECT MIN(from_ms), MAX(to_ms) FROM capacity_samples`).Scan(&from, &to))
	wall := float64(to-from) / 1000
	pools, err := db.Capacity(context.Background(), time.UnixMilli(from), time.UnixMilli(to))
	must.NoError(t, err)
	devices := map[string]float64{"train nvidia/gpu/H200": 8, "infer nvidia/gpu/L4": 2}
	must.Len(t, 2, pools)
	for _, p := range pools {
		want := devices[p.Pool+" "+p.Model] * wall
		sum := p.Allocated + p.Idle + p.Down
		must.False(t, p.Overbooked, must.Sprintf("%s %s: allocated %.1f + down %.1f > capacity %.1f", p.Pool, p.Model, p.Allocated, p.Down, p.Capacity))
		must.LessEq(t, 0.005, math.Abs(sum-want)/want, must.Sprintf("%s %s: %.1f + %.1f + %.1f vs %.1f",
			p.Pool, p.Model, p.Allocated, p.Idle, p.Down, want))
		if p.Pool == "train" {
			must.Positive(t, p.Down, must.Sprint("train-2 was ineligible for a third of the run"))
		}
		t.Logf("%s %s over %.0f s: capacity %.1f, allocated %.1f, idle %.1f, down %.1f, waiting %.1f device-s",
			p.Pool, p.Model, wall, want, p.Allocated, p.Idle, p.Down, p.Waiting)
	}
}

// checkDecisionsAndUsed: governor decisions were persisted (they survive
// the restarts), and device stats gave a used basis.
func checkDecisionsAndUsed(t *testing.T, db *ledger.DB) {
	es, err := db.Entries(context.Background(), ledger.AuditQuery{Kind: ledger.KindDecision})
	must.NoError(t, err)
	must.Positive(t, len(es), must.Sprint("no governor decision persisted"))
	var used, sampled, device int64
	must.NoError(t, db.SQL().QueryRow(`SELECT COALESCE(SUM(used_device_ms), 0), COALESCE(SUM(used_sampled_ms), 0),
		COALESCE(SUM(devices * (end_ms - start_ms)), 0) FROM segments WHERE model <> ''`).Scan(&used, &sampled, &device))
	must.Positive(t, sampled)
	must.LessEq(t, sampled, used)
	t.Logf("%d decisions persisted; used basis %.1f of %.1f device-s sampled (%.0f%% of %.1f allocated)",
		len(es), float64(used)/1000, float64(sampled)/1000, 100*float64(sampled)/float64(device), float64(device)/1000)
}

// setWeightDirectly edits a namespace's meta straight in Nomad.
func (e *ledgerEnv) setWeightDirectly(name, weight string) {
	ns, _, err := e.c.API.Namespaces().Info(name, nil)
	must.NoError(e.t, err)
	ns.Meta["allot.weight"] = weight
	_, err = e.c.API.Namespaces().Register(ns, nil)
	must.NoError(e.t, err)
}

// checkAuditThroughCLI: allotctl audit shows alice's change through the
// governor with her accessor, the direct edit with actor unknown; a
// tampered row makes allotctl audit -verify fail.
func (e *ledgerEnv) checkAuditThroughCLI(t *testing.T, mgmt string) {
	var out ledger.AuditAnswer
	e.c.Eventually(30*time.Second, "both weight changes audited", func() error {
		code, stdout, errOut := e.allotctl(e.a, mgmt, "audit", "-kind", "namespace-meta", "-json", "-namespace", "team-a")
		if code != 0 {
			return errors.New(errOut)
		}
		out = ledger.AuditAnswer{}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			return err
		}
		if findChange(out.Entries, "allot.weight=\"5\"") == nil {
			return errors.New("direct edit not audited yet")
		}
		return nil
	})
	mine := findChange(out.Entries, "allot.weight=\"2\"")
	must.NotNil(t, mine)
	must.Eq(t, e.alice.AccessorID, mine.Actor)
	must.Eq(t, "alice", mine.ActorName)
	must.Eq(t, ledger.ActorUnknown, findChange(out.Entries, "allot.weight=\"5\"").Actor)
	code, stdout, _ := e.allotctl(e.a, mgmt, "audit", "-verify")
	must.Zero(t, code)
	must.StrContains(t, stdout, "Chain verified")
	db := e.openSQLite()
	_, err := db.SQL().Exec(`UPDATE audit SET actor = 'mallory' WHERE seq = ?`, mine.Seq)
	must.NoError(t, err)
	code, _, errOut := e.allotctl(e.a, mgmt, "audit", "-verify")
	must.Eq(t, 3, code)
	must.StrContains(t, errOut, fmt.Sprintf("entry %d was changed", mine.Seq))
}

func findChange(es []ledger.Entry, newValue string) *ledger.Entry {
	for i := range es {
		if es[i].Kind == ledger.KindNamespaceMeta && strings.Contains(es[i].New, newValue) &&
			!strings.Contains(es[i].Old, newValue) {
			return &es[i]
		}
	}
	return nil
}

// checkAuditRows: the change through governor B carries alice's accessor.
func checkAuditRows(t *testing.T, db *ledger.DB, ns, key string, alice *api.ACLToken) {
	es, err := db.Entries(context.Background(), ledger.AuditQuery{Namespaces: []string{ns}, Kind: ledger.KindNamespaceMeta})
	must.NoError(t, err)
	e := findChange(es, `allot.weight="3"`)
	must.NotNil(t, e, must.Sprintf("entries: %+v", es))
	must.Eq(t, alice.AccessorID, e.Actor)
	must.Eq(t, key, e.Subject)
}

func checkTamper(t *testing.T, db *ledger.DB) {
	ctx := context.Background()
	_, err := db.Verify(ctx)
	must.NoError(t, err)
	_, err = db.SQL().Exec(`UPDATE audit SET new_value = 'allot.quota.gpu="999"' WHERE seq = 1`)
	must.NoError(t, err)
	_, err = db.Verify(ctx)
	must.ErrorIs(t, err, ledger.ErrTampered)
}

// checkCapacityRanking: allotctl report capacity ranks the short pool
// (seven 2-L4 jobs for two L4s) first.
func (e *ledgerEnv) checkCapacityRanking(t *testing.T, mgmt string, since time.Time) {
	code, stdout, errOut := e.allotctl(e.a, mgmt, "report", "capacity", "-json", "-since", since.UTC().Format(time.RFC3339))
	must.Zero(t, code, must.Sprint(errOut))
	var out ledger.CapacityAnswer
	must.NoError(t, json.Unmarshal([]byte(stdout), &out))
	must.Len(t, 2, out.Pools)
	must.Eq(t, "infer", out.Pools[0].Pool, must.Sprintf("capacity report: %s", stdout))
	must.Positive(t, out.Pools[0].Waiting)
	must.Greater(t, out.Pools[1].Shortage, out.Pools[0].Shortage)
	_, table, _ := e.allotctl(e.a, mgmt, "report", "capacity", "-since", since.UTC().Format(time.RFC3339))
	t.Logf("allotctl report capacity:\n%s", table)
}

// checkMetrics: /metrics carries allot_gpu_seconds_total per tenant.
func (e *ledgerEnv) checkMetrics(t *testing.T, mgmt string) {
	req, err := http.NewRequest(http.MethodGet, e.a.Addr+"/metrics", nil)
	must.NoError(t, err)
	req.Header.Set("X-Nomad-Token", mgmt)
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	must.StrContains(t, string(body), `allot_gpu_seconds_total{basis="allocated",model="nvidia/gpu/H200",namespace="team-a"}`)
	_, usage, _ := e.allotctl(e.a, mgmt, "report", "usage", "-by", "tenant,model", "-since", "1h")
	_, cost, _ := e.allotctl(e.a, mgmt, "report", "cost", "-since", "1h")
	t.Logf("allotctl report usage -by tenant,model:\n%s\nallotctl report cost:\n%s", usage, cost)
}
