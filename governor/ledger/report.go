package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrBadQuery is returned for a report query the ledger cannot answer.
var ErrBadQuery = errors.New("bad report query")

// dims maps a -by dimension to its column.
var dims = map[string]string{
	"tenant": "namespace",
	"model":  "model",
	"pool":   "node_pool",
	"job":    "job_id",
	"class":  "class",
	"node":   "node_name",
}

// Query selects segments overlapping [Since, Until) and groups them By
// (tenant, model, pool, job, class, node). Namespaces, when not nil,
// restricts the report to those namespaces (the caller's readable ones).
type Query struct {
	Since, Until time.Time
	By           []string
	Namespaces   []string
}

// Usage is one group's use over the window. Times are clipped to the
// window and kept in milliseconds so groups sum exactly; seconds and hours
// are derived from them.
type Usage struct {
	Key           map[string]string `json:"key"`
	Allocations   int64             `json:"allocations"`
	DeviceMS      int64             `json:"device_ms"`
	UsedDeviceMS  int64             `json:"used_device_ms"`
	UsedSampledMS int64             `json:"used_sampled_ms"`
	CPUMHzMS      int64             `json:"cpu_mhz_ms"`
	MemoryMBMS    int64             `json:"memory_mb_ms"`
	RunMS         int64             `json:"run_ms"`
	WaitMS        int64             `json:"wait_ms"`
	Failures      int64             `json:"failures"`
	Preemptions   int64             `json:"preemptions"`
	Restarts      int64             `json:"restarts"`
	LostWorkMS    int64             `json:"lost_work_ms"`
	GPUHours      float64           `json:"gpu_hours"`
}

// Check validates q and fills its defaults (until now, since 30 days
// before, by tenant).
func (q *Query) Check(now time.Time) error {
	if q.Until.IsZero() {
		q.Until = now
	}
	if q.Since.IsZero() {
		q.Since = q.Until.Add(-30 * 24 * time.Hour)
	}
	if !q.Since.Before(q.Until) {
		return fmt.Errorf("%w: since %s is not before until %s", ErrBadQuery, q.Since.Format(time.RFC3339), q.Until.Format(time.RFC3339))
	}
	if len(q.By) == 0 {
		q.By = []string{"tenant"}
	}
	for _, b := range q.By {
		if _, ok := dims[b]; !ok {
			return fmt.Errorf("%w: cannot group by %q (tenant, model, pool, job, class, node)", ErrBadQuery, b)
		}
	}
	return nil
}

// Usage reports use per group over the window, largest device time first.
func (d *DB) Usage(ctx context.Context, q Query) ([]Usage, error) {
	if err := q.Check(time.Now()); err != nil {
		return nil, err
	}
	cols := make([]string, len(q.By))
	for i, b := range q.By {
		cols[i] = dims[b]
	}
	if contains(q.By, "job") && !contains(q.By, "tenant") {
		cols = append(cols, "namespace")
	}
	s, u := q.Since.UnixMilli(), q.Until.UnixMilli()
	var args []any
	for i := 0; i < overlaps; i++ {
		args = append(args, u, s)
	}
	floor, err := d.startFloor(ctx, s)
	if err != nil {
		return nil, err
	}
	args = append(args, s, u, floor)
	where := `end_ms > ? AND start_ms < ? AND start_ms > ?`
	if q.Namespaces != nil {
		if len(q.Namespaces) == 0 {
			return []Usage{}, nil
		}
		where += ` AND namespace IN (` + strings.TrimSuffix(strings.Repeat("?,", len(q.Namespaces)), ",") + `)`
		for _, ns := range q.Namespaces {
			args = append(args, ns)
		}
	}
	return d.runUsage(ctx, d.usageSQL(strings.Join(cols, ", "), where), args, cols, q.By)
}

// overlaps is how many window overlaps usageSQL computes (two arguments
// each: until, since).
const overlaps = 6

// usageSQL builds the grouped usage query. An allocation's cpu and memory
// sit on its first segment only (Segments), so they count once. Sums are
// cast to BIGINT: PostgreSQL sums BIGINTs as NUMERIC.
func (d *DB) usageSQL(group, where string) string {
	ov := `(least(end_ms, ?) - greatest(start_ms, ?))`
	sum := func(x string) string { return `CAST(COALESCE(SUM(` + x + `), 0) AS BIGINT)` }
	return d.q(`SELECT ` + group + `, COUNT(DISTINCT alloc_id), ` +
		sum(`devices * `+ov) + `, ` +
		sum(`CASE WHEN end_ms > start_ms THEN used_device_ms * `+ov+` / (end_ms - start_ms) ELSE 0 END`) + `, ` +
		sum(`CASE WHEN end_ms > start_ms THEN used_sampled_ms * `+ov+` / (end_ms - start_ms) ELSE 0 END`) + `, ` +
		sum(`cpu_mhz * `+ov) + `, ` + sum(`memory_mb * `+ov) + `, ` +
		sum(`CASE WHEN model <> '' OR devices = 0 THEN `+ov+` ELSE 0 END`) + `, ` +
		sum(`start_ms - queued_ms`) + `, ` +
		sum(`CASE WHEN outcome = 'failed' THEN 1 ELSE 0 END`) + `, ` +
		sum(`CASE WHEN outcome = 'preempted' THEN 1 ELSE 0 END`) + `, ` +
		sum(`restarts`) + `, ` + sum(`lost_work_ms`) + `
		FROM segments WHERE ` + where + ` GROUP BY ` + group + ` ORDER BY ` + group)
}

func (d *DB) runUsage(ctx context.Context, query string, args []any, cols, by []string) ([]Usage, error) {
	rows, err := d.sql.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading usage: %w", err)
	}
	out := []Usage{}
	err = scanAll(rows, func(sc func(...any) error) error {
		keys := make([]string, len(cols))
		u := Usage{Key: map[string]string{}}
		dst := make([]any, 0, len(cols)+12)
		for i := range keys {
			dst = append(dst, &keys[i])
		}
		dst = append(dst, &u.Allocations, &u.DeviceMS, &u.UsedDeviceMS, &u.UsedSampledMS, &u.CPUMHzMS, &u.MemoryMBMS,
			&u.RunMS, &u.WaitMS, &u.Failures, &u.Preemptions, &u.Restarts, &u.LostWorkMS)
		if err := sc(dst...); err != nil {
			return err
		}
		for i, b := range by {
			u.Key[b] = keys[i]
		}
		if len(cols) > len(by) {
			u.Key["tenant"] = keys[len(by)]
		}
		u.GPUHours = float64(u.DeviceMS) / 3.6e6
		out = append(out, u)
		return nil
	})
	return out, err
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
