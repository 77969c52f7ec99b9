package ledger

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestCompletedRuns: a job version counts once every one of its
// segments completed, with its first start, last end and summed devices;
// a version with a running, preempted or failed allocation does not; the
// list starts at since and is in end order, cut at limit.
func TestCompletedRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		seg := func(alloc, job string, version uint64, dev int64, start, end int, outcome string) Segment {
			return Segment{AllocID: alloc, Model: "nvidia/gpu/H200", Namespace: "ml", JobID: job, JobVersion: version,
				TaskGroup: "g", Devices: dev, Start: at(start), End: at(end), Outcome: outcome, Open: outcome == OutcomeRunning}
		}
		must.NoError(t, db.Ingest(ctx, []Segment{
			seg("a1", "gang", 3, 8, 100, 700, OutcomeComplete),
			seg("a2", "gang", 3, 8, 110, 720, OutcomeComplete),
			seg("a3", "gang", 2, 8, 10, 90, OutcomePreempted), // an older version: preempted
			seg("b1", "small", 1, 1, 200, 260, OutcomeComplete),
			seg("c1", "busy", 1, 2, 50, 800, OutcomeRunning),
			seg("d1", "mixed", 1, 1, 50, 300, OutcomeComplete),
			seg("d2", "mixed", 1, 1, 50, 310, OutcomeFailed),
		}, 10))
		runs, err := db.CompletedRuns(ctx, t0, 10)
		must.NoError(t, err)
		must.Eq(t, []CompletedRun{
			{Namespace: "ml", JobID: "small", Version: 1, Devices: 1, Start: at(200), End: at(260)},
			{Namespace: "ml", JobID: "gang", Version: 3, Devices: 16, Start: at(100), End: at(720)},
		}, runs)
		runs, err = db.CompletedRuns(ctx, at(261), 10)
		must.NoError(t, err)
		must.SliceLen(t, 1, runs)
		must.Eq(t, "gang", runs[0].JobID)
		runs, err = db.CompletedRuns(ctx, t0, 1)
		must.NoError(t, err)
		must.SliceLen(t, 1, runs)
		must.Eq(t, "small", runs[0].JobID)
	})
}

// fullScanRuns is CompletedRuns as it was before migration 3: every
// segment grouped by job version, then filtered by end. The indexed query
// must answer the same.
func fullScanRuns(t *testing.T, db *DB, since time.Time, limit int) []CompletedRun {
	t.Helper()
	rows, err := db.sql.Query(db.q(`SELECT namespace, job_id, job_version,
		CAST(SUM(devices) AS BIGINT), MIN(start_ms), MAX(end_ms)
		FROM segments
		GROUP BY namespace, job_id, job_version
		HAVING MAX(end_ms) >= ? AND MIN(start_ms) > 0
			AND SUM(CASE WHEN outcome = ? AND open = 0 THEN 0 ELSE 1 END) = 0
		ORDER BY MAX(end_ms), namespace, job_id, job_version
		LIMIT ?`), since.UnixMilli(), OutcomeComplete, limit)
	must.NoError(t, err)
	var out []CompletedRun
	must.NoError(t, scanAll(rows, func(sc func(...any) error) error {
		var r CompletedRun
		var start, end int64
		if err := sc(&r.Namespace, &r.JobID, &r.Version, &r.Devices, &start, &end); err != nil {
			return err
		}
		r.Start, r.End = time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC()
		out = append(out, r)
		return nil
	}))
	return out
}

// TestCompletedRunsMatchesFullScan: on runs spanning several segments
// (gangs, restarts, several models, a version with one old segment and one
// new, ties in end), the indexed query returns what the full scan returned
// for every since (before, inside and after the runs) and limit.
func TestCompletedRunsMatchesFullScan(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		var segs []Segment
		outcomes := []string{OutcomeComplete, OutcomeComplete, OutcomeComplete, OutcomeFailed, OutcomePreempted}
		for j := 0; j < 12; j++ {
			for v := uint64(0); v < 3; v++ {
				n := 1 + (j+int(v))%4
				for k := 0; k < n; k++ {
					start := 10*j + 100*int(v) + 7*k
					outcome := OutcomeComplete
					if k == n-1 {
						outcome = outcomes[(j+int(v))%len(outcomes)]
					}
					model := "nvidia/gpu/H200"
					if k%2 == 1 {
						model = "nvidia/gpu/A100"
					}
					segs = append(segs, Segment{AllocID: fmt.Sprintf("a%d-%d-%d", j, v, k), Model: model,
						Namespace: fmt.Sprintf("ns%d", j%3), JobID: fmt.Sprintf("job%d", j), JobVersion: v, TaskGroup: "g",
						Devices: int64(k + 1), Start: at(start), End: at(start + 50 + 400*(k%2)), Outcome: outcome})
				}
			}
		}
		must.NoError(t, db.Ingest(ctx, segs, 10))
		total := 0
		for _, since := range []int{0, 1, 60, 150, 300, 455, 500, 700, 1000} {
			for _, limit := range []int{1, 3, 1000} {
				want := fullScanRuns(t, db, at(since), limit)
				got, err := db.CompletedRuns(ctx, at(since), limit)
				must.NoError(t, err)
				must.Eq(t, want, got, must.Sprintf("since %d, limit %d", since, limit))
				total += len(got)
			}
		}
		must.Positive(t, total, must.Sprint("the fixture has completed runs"))
	})
}
