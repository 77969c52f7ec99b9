package ledger

import (
	"context"
	"fmt"
	"math"
	"time"
)

// CompletedRun is one job version whose allocations all completed: how
// long it ran, for the governor's learned run times (governor/estimate).
type CompletedRun struct {
	Namespace, JobID string
	Version          uint64
	// Devices sums the device instances of its allocations.
	Devices int64
	// Start is its first allocation's start, End its last one's end.
	Start, End time.Time
}

// CompletedRuns lists the job versions whose every segment completed
// (none running, failed, stopped, preempted, lost or vanished) and whose
// last segment ended at or after since, oldest end first, at most limit.
//
// A version whose last segment ended since has a segment that ended since:
// those versions come from the end_ms index, and only their segments are
// grouped (the job version index), so a poll since the learner's last one
// costs the runs that ended since, not the whole table (migration 3).
// The range on end_ms is closed above (by the largest int64) because
// SQLite, which runs without ANALYZE, reckons a half-open range too wide
// and would rather read the whole job version index in order for DISTINCT.
func (d *DB) CompletedRuns(ctx context.Context, since time.Time, limit int) ([]CompletedRun, error) {
	rows, err := d.sql.QueryContext(ctx, d.q(`SELECT s.namespace, s.job_id, s.job_version,
		CAST(SUM(s.devices) AS BIGINT), MIN(s.start_ms), MAX(s.end_ms)
		FROM (SELECT DISTINCT namespace, job_id, job_version FROM segments WHERE end_ms BETWEEN ? AND ?) v
		JOIN segments s ON s.namespace = v.namespace AND s.job_id = v.job_id AND s.job_version = v.job_version
		GROUP BY s.namespace, s.job_id, s.job_version
		HAVING MIN(s.start_ms) > 0
			AND SUM(CASE WHEN s.outcome = ? AND s.open = 0 THEN 0 ELSE 1 END) = 0
		ORDER BY MAX(s.end_ms), s.namespace, s.job_id, s.job_version
		LIMIT ?`), since.UnixMilli(), int64(math.MaxInt64), OutcomeComplete, limit)
	if err != nil {
		return nil, fmt.Errorf("listing completed runs: %w", err)
	}
	var out []CompletedRun
	err = scanAll(rows, func(sc func(...any) error) error {
		var r CompletedRun
		var start, end int64
		if err := sc(&r.Namespace, &r.JobID, &r.Version, &r.Devices, &start, &end); err != nil {
			return err
		}
		r.Start, r.End = time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC()
		out = append(out, r)
		return nil
	})
	return out, err
}
