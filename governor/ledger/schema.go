package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migrations is the schema, one step per version, in order. A step is
// never edited once released: changes append a new step. The SQL is the
// subset both SQLite and PostgreSQL accept (BIGINT, TEXT, composite
// primary keys, ON CONFLICT upserts). Times are Unix milliseconds.
var migrations = []string{
	// 1: usage segments, ledger state (watermarks), capacity samples, the
	// audit chain and the last known namespace meta.
	`CREATE TABLE ledger_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
	CREATE TABLE segments (
		alloc_id TEXT NOT NULL,
		model TEXT NOT NULL,
		namespace TEXT NOT NULL,
		job_id TEXT NOT NULL,
		job_version BIGINT NOT NULL,
		task_group TEXT NOT NULL,
		class TEXT NOT NULL,
		node_pool TEXT NOT NULL,
		node_id TEXT NOT NULL,
		node_name TEXT NOT NULL,
		devices BIGINT NOT NULL,
		cpu_mhz BIGINT NOT NULL,
		memory_mb BIGINT NOT NULL,
		queued_ms BIGINT NOT NULL,
		start_ms BIGINT NOT NULL,
		end_ms BIGINT NOT NULL,
		open BIGINT NOT NULL,
		outcome TEXT NOT NULL,
		preempted_by TEXT NOT NULL,
		restarts BIGINT NOT NULL,
		lost_work_ms BIGINT NOT NULL,
		used_device_ms BIGINT NOT NULL,
		used_sampled_ms BIGINT NOT NULL,
		modify_index BIGINT NOT NULL,
		PRIMARY KEY (alloc_id, model)
	);
	CREATE INDEX segments_ns_start ON segments (namespace, start_ms);
	CREATE INDEX segments_start ON segments (start_ms);
	CREATE INDEX segments_open ON segments (open);
	CREATE TABLE capacity_samples (
		node_pool TEXT NOT NULL,
		model TEXT NOT NULL,
		from_ms BIGINT NOT NULL,
		to_ms BIGINT NOT NULL,
		total BIGINT NOT NULL,
		down BIGINT NOT NULL,
		waiting BIGINT NOT NULL,
		PRIMARY KEY (node_pool, model, from_ms)
	);
	CREATE INDEX capacity_to ON capacity_samples (to_ms);
	CREATE TABLE audit (
		seq BIGINT PRIMARY KEY,
		ts_ms BIGINT NOT NULL,
		kind TEXT NOT NULL,
		actor TEXT NOT NULL,
		actor_name TEXT NOT NULL,
		namespace TEXT NOT NULL,
		subject TEXT NOT NULL,
		old_value TEXT NOT NULL,
		new_value TEXT NOT NULL,
		detail TEXT NOT NULL,
		prev_hash TEXT NOT NULL,
		hash TEXT NOT NULL
	);
	CREATE INDEX audit_ts ON audit (ts_ms);
	CREATE TABLE namespace_meta (namespace TEXT PRIMARY KEY, meta TEXT NOT NULL);`,
	// 2: the longest segment so far, which bounds a window's scan of
	// start_ms from below (see DB.longest).
	`INSERT INTO ledger_state (key, value)
	SELECT 'max_segment_ms', CAST(COALESCE(MAX(end_ms - start_ms), 0) AS TEXT) FROM segments;`,
	// 3: DB.CompletedRuns finds the job versions with a segment ending
	// since the learner's last poll by end_ms, then reads only their
	// segments by job version, instead of grouping the whole table.
	`CREATE INDEX segments_end ON segments (end_ms);
	CREATE INDEX segments_job_version ON segments (namespace, job_id, job_version);`,
}

// SchemaVersion is the version Open migrates to.
var SchemaVersion = len(migrations)

// migrate applies every migration the database has not seen, each in its
// own transaction together with its row in ledger_migrations. On
// PostgreSQL several governors may start at once against one database
// (HA): they take turns under an advisory lock (see lockMigrations).
func (d *DB) migrate(ctx context.Context) error {
	if d.driver == DriverPostgres {
		unlock, err := d.lockMigrations(ctx)
		if err != nil {
			return err
		}
		defer unlock()
	}
	return d.migrateLocked(ctx)
}

// migrateLocked runs the migrations; on PostgreSQL the caller holds the
// migration lock.
func (d *DB) migrateLocked(ctx context.Context) error {
	if _, err := d.sql.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS ledger_migrations
		(version BIGINT PRIMARY KEY, applied_ms BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("creating ledger_migrations: %w", err)
	}
	var have int
	if err := d.sql.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM ledger_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("reading the ledger schema version: %w", err)
	}
	if have > len(migrations) {
		return fmt.Errorf("ledger schema version %d is newer than this governor's %d: upgrade the governor", have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		step := migrations[v-1]
		err := d.tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, step); err != nil {
				return fmt.Errorf("ledger migration %d: %w", v, err)
			}
			_, err := tx.ExecContext(ctx, d.q(`INSERT INTO ledger_migrations (version, applied_ms) VALUES (?, ?)`),
				v, time.Now().UnixMilli())
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
