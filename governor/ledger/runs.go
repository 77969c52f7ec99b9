package ledger

import (
	"context"
	"fmt"
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
func (d *DB) CompletedRuns(ctx context.Context, since time.Time, limit int) ([]CompletedRun, error) {
	rows, err := d.sql.QueryContext(ctx, d.q(`SELECT namespace, job_id, job_version,
		CAST(SUM(devices) AS BIGINT), MIN(start_ms), MAX(end_ms)
		FROM segments
		GROUP BY namespace, job_id, job_version
		HAVING MAX(end_ms) >= ? AND MIN(start_ms) > 0
			AND SUM(CASE WHEN outcome = ? AND open = 0 THEN 0 ELSE 1 END) = 0
		ORDER BY MAX(end_ms), namespace, job_id, job_version
		LIMIT ?`), since.UnixMilli(), OutcomeComplete, limit)
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
