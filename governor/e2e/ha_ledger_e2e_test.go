//go:build e2e

package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/internal/pgtest"
)

// writeTracking makes PostgreSQL itself note every row any session writes
// to the ledger's tables, with the session's application_name (each
// governor's DSN names it) and the database's clock, in ledger_writes:
// who wrote the ledger, and when, without trusting the governors.
const writeTracking = `
CREATE TABLE ledger_writes (seq BIGSERIAL PRIMARY KEY, app TEXT NOT NULL, tbl TEXT NOT NULL,
	at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION note_ledger_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ledger_writes (app, tbl) VALUES (current_setting('application_name'), TG_TABLE_NAME);
	RETURN NULL;
END $$;
`

// trackedTables are the tables the governors write.
var trackedTables = []string{"segments", "capacity_samples", "audit", "namespace_meta", "ledger_state"}

// TestE2E_HALedger runs two HA governors (check_ttl 2 s, lock_delay 1 s)
// with Nomad's ACLs on, sharing one PostgreSQL ledger: jobs complete, the
// leader is killed with SIGKILL while jobs run, the standby takes over,
// the old leader comes back as a standby, more jobs complete. Then the
// ledger holds exactly one segment per allocation matching Nomad's task
// states, both governors answer /allot/v1/usage with the same numbers
// (before and after the failover), and PostgreSQL's own record of the
// writes shows that only the leader of the moment wrote the ledger.
func TestE2E_HALedger(t *testing.T) {
	began := time.Now()
	pg, err := pgtest.Start()
	if err != nil {
		t.Skipf("!!! TestE2E_HALedger DOES NOT RUN: it needs PostgreSQL: %v", err)
	}
	t.Cleanup(pg.Stop)
	base := pg.NewDB(t)
	db := prepareTrackedLedger(t, base)
	e := newHAEnvWith(t, haEnvOptions{ACL: true, GovConfig: func(name string) string {
		return fmt.Sprintf("ledger {\n  driver = \"postgres\"\n  dsn = %q\n  accrue_every = \"1s\"\n}",
			base+"&application_name="+name)
	}})
	leader, standby, term := e.roles()
	t.Logf("%s leads term %d, %s stands by (%s since start)", leader.name, term, standby.name, time.Since(began).Round(time.Second))

	// Before: jobs through the standby (forwarded), completed.
	first := e.ledgerJobs(standby, "before", 3, 2)
	e.waitComplete(first)
	e.waitRecorded(db)
	e.sameUsage(db, leader, standby, "before the failover")

	// The failover: kill -9 the leader once it recorded a running
	// allocation of the next jobs.
	during := e.ledgerJobs(standby, "during", 3, 5)
	e.waitOpenSegment(db, during)
	killedAt := time.Now()
	leader.g.Kill()
	newTerm, _ := e.waitLeads(standby, term, time.Minute)
	t.Logf("%s killed; %s leads term %d after %s", leader.name, standby.name, newTerm, time.Since(killedAt).Round(time.Millisecond))
	leader.g.Start()
	newLeader, newStandby := standby, leader

	// After: jobs through the restarted governor, now the standby.
	after := e.ledgerJobs(newStandby, "after", 3, 2)
	e.waitComplete(append(during, after...))
	e.waitRecorded(db)

	checkOneSegmentEach(t, db, e.allocTruth())
	e.sameUsage(db, newLeader, newStandby, "after the failover")
	// A namespace change through the standby: forwarded to the leader,
	// whose auditor records it; so the standby writes nothing, audit
	// included, which checkOnlyLeaderWrote then shows.
	e.checkAuditThroughStandby(base, newStandby)
	checkOnlyLeaderWrote(t, db, leader.name, newLeader.name, killedAt)
	checkAuditWriter(t, db, newLeader.name)
	e.checkWriteLog()
	t.Logf("TestE2E_HALedger wall time %s", time.Since(began).Round(time.Second))
}

// prepareTrackedLedger migrates the ledger at dsn (the governors then find
// it current) and installs the write tracking on its tables.
func prepareTrackedLedger(t *testing.T, dsn string) *sql.DB {
	lg, err := ledger.Open(context.Background(), ledger.DriverPostgres, dsn)
	must.NoError(t, err)
	must.NoError(t, lg.Close())
	db, err := sql.Open("pgx", dsn)
	must.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec(writeTracking)
	must.NoError(t, err)
	for _, tbl := range trackedTables {
		_, err = db.Exec(fmt.Sprintf(`CREATE TRIGGER note_write AFTER INSERT OR UPDATE OR DELETE ON %s
			FOR EACH ROW EXECUTE FUNCTION note_ledger_write()`, tbl))
		must.NoError(t, err)
	}
	return db
}

// ledgerJobs registers n jobs of secs seconds through g (a 503 during a
// failover is retried) and returns their IDs.
func (e *haEnv) ledgerJobs(g *haGov, prefix string, n, secs int) []string {
	e.t.Helper()
	client, err := api.NewClient(&api.Config{Address: g.g.Addr, SecretID: e.c.ManagementToken()})
	must.NoError(e.t, err)
	var ids []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("ledger-%s-%d", prefix, i)
		job := haJob(id)
		job.TaskGroups[0].Tasks[0].Config["args"] = []string{fmt.Sprint(secs)}
		s := registerJob(client, job)
		must.NoError(e.t, s.err, must.Sprintf("job %s", id))
		ids = append(ids, id)
	}
	return ids
}

// waitComplete waits until every job ran one allocation to completion.
func (e *haEnv) waitComplete(ids []string) {
	e.t.Helper()
	e.c.Eventually(2*time.Minute, "every job complete", func() error {
		for _, id := range ids {
			allocs, _, err := e.c.API.Jobs().Allocations(id, true, &api.QueryOptions{Namespace: haNS})
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			if len(allocs) != 1 || allocs[0].ClientStatus != api.AllocClientStatusComplete {
				return fmt.Errorf("%s: %d allocations, not one complete", id, len(allocs))
			}
		}
		return nil
	})
}

// allocTruth is every allocation of the tenant with its run time from
// Nomad's task states (first StartedAt to last FinishedAt).
func (e *haEnv) allocTruth() map[string]time.Duration {
	allocs, _, err := e.c.API.Allocations().List(&api.QueryOptions{Namespace: haNS})
	must.NoError(e.t, err)
	out := map[string]time.Duration{}
	for _, a := range allocs {
		var start, end time.Time
		for _, ts := range a.TaskStates {
			if start.IsZero() || ts.StartedAt.Before(start) {
				start = ts.StartedAt
			}
			if ts.FinishedAt.After(end) {
				end = ts.FinishedAt
			}
		}
		must.False(e.t, start.IsZero() || end.IsZero(), must.Sprintf("allocation %s of %s has run and finished", a.ID, a.JobID))
		out[a.ID] = end.Sub(start)
	}
	return out
}

// waitRecorded waits until the ledger holds a closed segment for every
// allocation of the tenant Nomad lists.
func (e *haEnv) waitRecorded(db *sql.DB) {
	e.t.Helper()
	e.c.Eventually(time.Minute, "the ledger caught up with Nomad", func() error {
		segs, err := haSegments(db)
		if err != nil {
			return err
		}
		for id := range e.allocTruth() {
			s, ok := segs[id]
			switch {
			case !ok:
				return fmt.Errorf("no segment for allocation %s", id)
			case s.open:
				return fmt.Errorf("segment of allocation %s still open", id)
			}
		}
		return nil
	})
}

// waitOpenSegment waits until the ledger holds an open segment of one of
// the jobs: the leader recorded it running.
func (e *haEnv) waitOpenSegment(db *sql.DB, ids []string) {
	e.t.Helper()
	e.c.Eventually(time.Minute, "a running allocation in the ledger", func() error {
		for _, id := range ids {
			var n int
			if err := db.QueryRow(`SELECT COUNT(*) FROM segments WHERE job_id = $1 AND open = 1`, id).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
		}
		return fmt.Errorf("no open segment of %v yet", ids)
	})
}

// haSegment is one segment row as the checks need it.
type haSegment struct {
	rows       int
	open       bool
	ms, cpuMHz int64
	devices    int64
}

// haSegments reads every segment of the tenant, by allocation.
func haSegments(db *sql.DB) (map[string]haSegment, error) {
	rows, err := db.Query(`SELECT alloc_id, open, end_ms - start_ms, cpu_mhz, devices FROM segments WHERE namespace = $1`, haNS)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]haSegment{}
	for rows.Next() {
		var id string
		var open int
		var s haSegment
		if err := rows.Scan(&id, &open, &s.ms, &s.cpuMHz, &s.devices); err != nil {
			return nil, err
		}
		s.rows = out[id].rows + 1
		s.open = open == 1
		out[id] = s
	}
	return out, rows.Err()
}

// checkOneSegmentEach: exactly one segment per allocation (none lost,
// none twice), its run time within ±1 s of Nomad's (TestE2E_Ledger's
// tolerance) and its cpu what the job asked for.
func checkOneSegmentEach(t *testing.T, db *sql.DB, truth map[string]time.Duration) {
	segs, err := haSegments(db)
	must.NoError(t, err)
	must.Eq(t, len(truth), len(segs), must.Sprint("segments vs allocations Nomad lists"))
	worst := 0.0
	for id, want := range truth {
		s, ok := segs[id]
		must.True(t, ok, must.Sprintf("allocation %s has no segment", id))
		must.Eq(t, 1, s.rows, must.Sprintf("allocation %s", id))
		d := math.Abs(float64(s.ms)/1000 - want.Seconds())
		worst = math.Max(worst, d)
		must.LessEq(t, 1.0, d, must.Sprintf("allocation %s: ledger %d ms, Nomad %s", id, s.ms, want))
		must.Eq(t, int64(haJobCPU), s.cpuMHz)
		must.Zero(t, s.devices)
	}
	t.Logf("%d allocations, one segment each; run (CPU) seconds match Nomad's task states, worst difference %.3f s", len(truth), worst)
}

// sameUsage: both governors answer /allot/v1/usage with the same rows for
// one window, and those rows are the ledger's own sums.
func (e *haEnv) sameUsage(db *sql.DB, leader, standby *haGov, when string) {
	e.t.Helper()
	since, until := time.Now().Add(-time.Hour), time.Now().Add(time.Minute)
	a, b := e.usage(leader, since, until), e.usage(standby, since, until)
	must.Positive(e.t, len(a.Rows))
	must.Eq(e.t, a.Rows, b.Rows, must.Sprintf("%s: %s (leader) and %s (standby) answer /allot/v1/usage alike", when, leader.name, standby.name))
	var allocs, cpu, run int64
	must.NoError(e.t, db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(cpu_mhz * (end_ms - start_ms)), 0), COALESCE(SUM(end_ms - start_ms), 0)
		FROM segments WHERE namespace = $1`, haNS).Scan(&allocs, &cpu, &run))
	var gotAllocs, gotCPU, gotRun int64
	for _, r := range a.Rows {
		gotAllocs, gotCPU, gotRun = gotAllocs+r.Allocations, gotCPU+r.CPUMHzMS, gotRun+r.RunMS
	}
	must.Eq(e.t, allocs, gotAllocs)
	must.Eq(e.t, cpu, gotCPU)
	must.Eq(e.t, run, gotRun)
	e.t.Logf("%s: both governors report %d allocations, %.1f s run, %.1f MHz-s cpu", when, gotAllocs, float64(gotRun)/1000, float64(gotCPU)/1000)
}

// usage reads GET /allot/v1/usage?by=job from g.
func (e *haEnv) usage(g *haGov, since, until time.Time) ledger.UsageAnswer {
	e.t.Helper()
	q := url.Values{"since": {since.UTC().Format(time.RFC3339)}, "until": {until.UTC().Format(time.RFC3339)}, "by": {"job"}}
	req, err := http.NewRequest(http.MethodGet, g.g.Addr+"/allot/v1/usage?"+q.Encode(), nil)
	must.NoError(e.t, err)
	req.Header.Set("X-Nomad-Token", e.c.ManagementToken())
	resp, err := http.DefaultClient.Do(req)
	must.NoError(e.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must.NoError(e.t, err)
	must.Eq(e.t, http.StatusOK, resp.StatusCode, must.Sprintf("%s: %s", g.name, body))
	var out ledger.UsageAnswer
	must.NoError(e.t, json.Unmarshal(body, &out))
	return out
}

// checkOnlyLeaderWrote: every ledger write before the new leader's first
// one is the old leader's, every write from then on the new leader's: the
// standby wrote nothing while it stood by (its first write comes after
// the kill), and the deposed governor, restarted as a standby, wrote
// nothing after the new term's first write, not even the audit entry of
// the namespace change sent through it. (PostgreSQL's clock and the
// test's are the same machine's.)
func checkOnlyLeaderWrote(t *testing.T, db *sql.DB, oldLeader, newLeader string, killedAt time.Time) {
	var firstNew time.Time
	must.NoError(t, db.QueryRow(`SELECT MIN(at) FROM ledger_writes WHERE app = $1`, newLeader).Scan(&firstNew))
	must.True(t, firstNew.After(killedAt), must.Sprintf("%s wrote the ledger at %s, before it led (the leader was killed at %s)",
		newLeader, firstNew.Format(time.RFC3339Nano), killedAt.Format(time.RFC3339Nano)))
	rows, err := db.Query(`SELECT app, at >= $1, COUNT(*) FROM ledger_writes GROUP BY app, at >= $1 ORDER BY 1, 2`, firstNew)
	must.NoError(t, err)
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var app string
		var later bool
		var n int
		must.NoError(t, rows.Scan(&app, &later, &n))
		counts[fmt.Sprintf("%s/%v", app, later)] = n
	}
	must.NoError(t, rows.Err())
	t.Logf("ledger row writes by governor (false: before the new term's first write, true: from then on): %v", counts)
	must.Positive(t, counts[oldLeader+"/false"], must.Sprint("the first leader wrote the ledger"))
	must.Positive(t, counts[newLeader+"/true"], must.Sprint("the new leader writes the ledger"))
	must.Zero(t, counts[oldLeader+"/true"], must.Sprint("the deposed governor, now a standby, wrote no row at all"))
	must.MapLen(t, 2, counts, must.Sprint("no other writer: not the standby, not the deposed governor after the new term's first write"))
}

// checkAuditWriter: every audit and namespace_meta row was written by a
// leader, the audit entries since the failover by the new leader only
// (among them the namespace change sent through the standby).
func checkAuditWriter(t *testing.T, db *sql.DB, newLeader string) {
	rows, err := db.Query(`SELECT app, COUNT(*) FROM ledger_writes WHERE tbl IN ('audit', 'namespace_meta')
		AND at >= (SELECT MIN(at) FROM ledger_writes WHERE app = $1) GROUP BY app ORDER BY 1`, newLeader)
	must.NoError(t, err)
	defer rows.Close()
	by := map[string]int{}
	for rows.Next() {
		var app string
		var n int
		must.NoError(t, rows.Scan(&app, &n))
		by[app] = n
	}
	must.NoError(t, rows.Err())
	t.Logf("audit and namespace_meta rows written since the new term's first write, by governor: %v", by)
	must.MapLen(t, 1, by, must.Sprint("only the leader writes audit entries"))
	must.Positive(t, by[newLeader])
}

// checkAuditThroughStandby: a namespace meta change through the standby's
// proxy is forwarded to the leader and audited once, in the shared chain,
// by the leader's auditor, with the caller's token accessor; the leader's
// poll of Nomad does not record it again as actor unknown (the auditor's
// mutex orders both in the one governor that writes). A later change
// straight to Nomad, audited by the leader as unknown, shows that the
// leader's poll ran after the forwarded change's entry.
func (e *haEnv) checkAuditThroughStandby(dsn string, standby *haGov) {
	e.t.Helper()
	lg, err := ledger.Open(context.Background(), ledger.DriverPostgres, dsn)
	must.NoError(e.t, err)
	defer lg.Close()
	self, _, err := e.c.API.ACLTokens().Self(nil)
	must.NoError(e.t, err)
	via, err := api.NewClient(&api.Config{Address: standby.g.Addr, SecretID: e.c.ManagementToken()})
	must.NoError(e.t, err)
	setWeight := func(c *api.Client, w string) {
		ns, _, err := e.c.API.Namespaces().Info(haNS, nil)
		must.NoError(e.t, err)
		ns.Meta["allot.weight"] = w
		_, err = c.Namespaces().Register(ns, nil)
		must.NoError(e.t, err)
	}
	setWeight(via, "7")
	setWeight(e.c.API, "8")
	var es []ledger.Entry
	e.c.Eventually(30*time.Second, "the direct change audited", func() error {
		es, err = lg.Entries(context.Background(), ledger.AuditQuery{Kind: ledger.KindNamespaceMeta, Namespaces: []string{haNS}})
		if err != nil {
			return err
		}
		if len(weightChanges(es, "8")) == 0 {
			return fmt.Errorf("no entry for allot.weight=8 yet among %d", len(es))
		}
		return nil
	})
	mine := weightChanges(es, "7")
	must.Len(e.t, 1, mine, must.Sprintf("the change through the standby, audited once: %+v", es))
	must.Eq(e.t, self.AccessorID, mine[0].Actor)
	must.Eq(e.t, ledger.ActorUnknown, weightChanges(es, "8")[0].Actor)
	n, err := lg.Verify(context.Background())
	must.NoError(e.t, err)
	e.t.Logf("namespace change through the standby audited once with the caller's accessor; audit chain of %d entries verified", n)
}

// weightChanges are the entries that set allot.weight to w.
func weightChanges(es []ledger.Entry, w string) []ledger.Entry {
	var out []ledger.Entry
	v := fmt.Sprintf("allot.weight=%q", w)
	for _, x := range es {
		if strings.Contains(x.New, v) && !strings.Contains(x.Old, v) {
			out = append(out, x)
		}
	}
	return out
}
