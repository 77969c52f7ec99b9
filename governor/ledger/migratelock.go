package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// migrationLockKey is the PostgreSQL advisory lock (a bigint, scoped to
// the database) that serialises the ledger's migrations: "allot-lm" in
// ASCII. Advisory locks belong to one database, so two ledgers on one
// server do not wait for each other.
const migrationLockKey int64 = 0x616c6c6f742d6c6d

// migrationLockWait bounds how long Open waits for another governor's
// migrations (a variable so that tests can shorten it).
var migrationLockWait = time.Minute

// ErrMigrationLocked is returned by Open when another process held the
// ledger's migration lock for longer than the wait.
var ErrMigrationLocked = errors.New("the ledger's migration lock is held by another process")

// lockMigrations takes the migration lock on a connection of its own (a
// session lock: PostgreSQL drops it if this process dies) and returns the
// function that releases it. Without the lock, two governors starting at
// once (HA) both see an empty ledger_migrations and run the same CREATE
// TABLE: one of them fails on PostgreSQL's catalog (`type
// "ledger_migrations" already exists`, TestConcurrentMigrations without
// the lock).
func (d *DB) lockMigrations(ctx context.Context) (func(), error) {
	conn, err := d.sql.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to the ledger database to migrate it: %w", err)
	}
	wait, cancel := context.WithTimeout(ctx, migrationLockWait)
	defer cancel()
	if _, err := conn.ExecContext(wait, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		conn.Close()
		if wait.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("%w (advisory lock %d) for over %s: another governor may be migrating the same database; "+
				"retry, or look for a stuck session in pg_locks: %w", ErrMigrationLocked, migrationLockKey, migrationLockWait, err)
		}
		return nil, fmt.Errorf("taking the ledger's migration lock: %w", err)
	}
	return func() {
		// Closing the connection would end the session and with it the
		// lock; unlocking first returns a clean connection to the pool.
		_, _ = conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, migrationLockKey)
		conn.Close()
	}, nil
}
