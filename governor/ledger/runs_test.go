package ledger

import (
	"context"
	"testing"

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
