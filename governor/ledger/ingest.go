package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"
)

// WatermarkAllocs is the ledger_state key of the Nomad index up to which
// allocations have been applied.
const WatermarkAllocs = "alloc_index"

// upsertSegment writes a segment keyed by (alloc_id, model). A closed
// segment changes only for a newer allocation (modify_index); an open one
// is brought up to date by every write. Replays of the same allocation
// therefore rewrite the same row with the same values: ingestion is
// idempotent, and exactly once follows from the key.
const upsertSegment = `INSERT INTO segments (alloc_id, model, namespace, job_id, job_version, task_group, class,
	node_pool, node_id, node_name, devices, cpu_mhz, memory_mb, queued_ms, start_ms, end_ms, open, outcome,
	preempted_by, restarts, lost_work_ms, used_device_ms, used_sampled_ms, modify_index)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (alloc_id, model) DO UPDATE SET
		job_version = excluded.job_version, class = excluded.class, node_pool = excluded.node_pool,
		devices = excluded.devices, cpu_mhz = excluded.cpu_mhz, memory_mb = excluded.memory_mb,
		queued_ms = least(segments.queued_ms, excluded.queued_ms),
		start_ms = excluded.start_ms, end_ms = excluded.end_ms, open = excluded.open, outcome = excluded.outcome,
		preempted_by = excluded.preempted_by, restarts = excluded.restarts, lost_work_ms = excluded.lost_work_ms,
		modify_index = excluded.modify_index
	WHERE segments.open = 1 OR excluded.modify_index > segments.modify_index`

// Ingest writes segments and moves the watermark to index in one
// transaction: after a crash either both are there or neither is, and the
// next run resumes from the watermark. A watermark never moves back.
func (d *DB) Ingest(ctx context.Context, segs []Segment, index uint64) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, d.q(upsertSegment))
		if err != nil {
			return fmt.Errorf("preparing segment upsert: %w", err)
		}
		defer stmt.Close()
		var longest int64
		for _, s := range segs {
			if _, err := stmt.ExecContext(ctx, segmentArgs(s)...); err != nil {
				return fmt.Errorf("writing segment %s/%s: %w", s.AllocID, s.Model, err)
			}
			if ms := s.End.Sub(s.Start).Milliseconds(); ms > longest {
				longest = ms
			}
		}
		if err := d.raiseLongest(ctx, tx, longest); err != nil {
			return err
		}
		return d.advance(ctx, tx, WatermarkAllocs, index)
	})
}

func segmentArgs(s Segment) []any {
	return []any{s.AllocID, s.Model, s.Namespace, s.JobID, int64(s.JobVersion), s.TaskGroup, s.Class, s.NodePool,
		s.NodeID, s.NodeName, s.Devices, s.CPUMHz, s.MemoryMB, s.Queued.UnixMilli(), s.Start.UnixMilli(),
		s.End.UnixMilli(), boolInt(s.Open), s.Outcome, s.PreemptedBy, s.Restarts, s.LostWork.Milliseconds(),
		s.UsedDevice.Milliseconds(), s.UsedSampled.Milliseconds(), int64(s.ModifyIndex)}
}

// advance moves a watermark forward (never back).
func (d *DB) advance(ctx context.Context, tx *sql.Tx, key string, index uint64) error {
	cur, err := d.watermark(ctx, tx, key)
	if err != nil || index <= cur {
		return err
	}
	return d.setState(ctx, tx, key, strconv.FormatUint(index, 10))
}

// Watermark returns the Nomad index up to which allocations are applied.
func (d *DB) Watermark(ctx context.Context) (uint64, error) {
	return d.watermark(ctx, d.sql, WatermarkAllocs)
}

func (d *DB) watermark(ctx context.Context, q querier, key string) (uint64, error) {
	v, err := d.getState(ctx, q, key)
	if err != nil || v == "" {
		return 0, err
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ledger watermark %s is %q: %w", key, v, err)
	}
	return n, nil
}

// Accrue brings every open segment up to now, so a report mid-run counts
// the time run so far. It returns the number of segments brought forward.
func (d *DB) Accrue(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, d.q(`UPDATE segments SET end_ms = ? WHERE open = 1 AND end_ms < ?`),
			now.UnixMilli(), now.UnixMilli())
		if err != nil {
			return fmt.Errorf("accruing open segments: %w", err)
		}
		n, _ = res.RowsAffected()
		var first sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MIN(start_ms) FROM segments WHERE open = 1`).Scan(&first); err != nil {
			return fmt.Errorf("reading open segments: %w", err)
		}
		if !first.Valid {
			return nil
		}
		return d.raiseLongest(ctx, tx, now.UnixMilli()-first.Int64)
	})
	return n, err
}

// stateLongest is the ledger_state key of the longest segment's length
// (ms). Every segment overlapping [since, until) starts after
// since − longest, which lets reports scan start_ms as a range.
const stateLongest = "max_segment_ms"

func (d *DB) raiseLongest(ctx context.Context, tx *sql.Tx, ms int64) error {
	cur, err := d.longest(ctx, tx)
	if err != nil || ms <= cur {
		return err
	}
	return d.setState(ctx, tx, stateLongest, strconv.FormatInt(ms, 10))
}

// longest returns the longest segment's length in ms.
func (d *DB) longest(ctx context.Context, q querier) (int64, error) {
	v, err := d.getState(ctx, q, stateLongest)
	if err != nil || v == "" {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ledger state %s is %q: %w", stateLongest, v, err)
	}
	return n, nil
}

// startFloor is the earliest start_ms a segment overlapping a window
// that begins at since may have.
func (d *DB) startFloor(ctx context.Context, since int64) (int64, error) {
	l, err := d.longest(ctx, d.sql)
	return since - l - 1, err
}

// CloseVanished closes the open segments whose allocation is not in
// listed (Nomad garbage-collected it while the governor was not looking):
// they end at their last accrual with outcome vanished.
func (d *DB) CloseVanished(ctx context.Context, listed map[string]bool) (int, error) {
	open, err := d.openAllocs(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range open {
		if listed[id] {
			continue
		}
		if _, err := d.sql.ExecContext(ctx, d.q(`UPDATE segments SET open = 0, outcome = ? WHERE alloc_id = ? AND open = 1`),
			OutcomeVanished, id); err != nil {
			return n, fmt.Errorf("closing vanished segment %s: %w", id, err)
		}
		n++
	}
	return n, nil
}

func (d *DB) openAllocs(ctx context.Context) ([]string, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT DISTINCT alloc_id FROM segments WHERE open = 1`)
	if err != nil {
		return nil, fmt.Errorf("listing open segments: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("listing open segments: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// AddUsed adds utilization-weighted device time to an open segment (the
// used basis): util × dt over devices, sampled over dt.
func (d *DB) AddUsed(ctx context.Context, allocID, model string, used, sampled time.Duration) error {
	_, err := d.sql.ExecContext(ctx, d.q(`UPDATE segments SET used_device_ms = used_device_ms + ?,
		used_sampled_ms = used_sampled_ms + ? WHERE alloc_id = ? AND model = ? AND open = 1`),
		used.Milliseconds(), sampled.Milliseconds(), allocID, model)
	if err != nil {
		return fmt.Errorf("adding used device time to %s: %w", allocID, err)
	}
	return nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
