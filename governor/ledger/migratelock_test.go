package ledger

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestConcurrentMigrations starts several governors' migrations at the
// same moment on an empty PostgreSQL database (HA: two governors starting
// together), a few rounds: every one succeeds, the schema is at
// SchemaVersion, and ledger_migrations holds each version exactly once.
func TestConcurrentMigrations(t *testing.T) {
	if pg == nil {
		t.Skipf("PostgreSQL NOT RUN: %v", pgMissing)
	}
	const migrators, rounds = 4, 3
	for round := 0; round < rounds; round++ {
		dsn := pg.NewDB(t)
		start := make(chan struct{})
		errs := make([]error, migrators)
		var wg sync.WaitGroup
		for i := 0; i < migrators; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				db, err := Open(context.Background(), DriverPostgres, dsn)
				if err == nil {
					err = db.Close()
				}
				errs[i] = err
			}(i)
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			must.NoError(t, err, must.Sprintf("round %d, migrator %d", round, i))
		}
		checkMigrated(t, dsn)
	}
}

// checkMigrated: each version once, up to SchemaVersion, and migration
// 2's state row once.
func checkMigrated(t *testing.T, dsn string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	must.NoError(t, err)
	defer db.Close()
	var rows, distinct, top, state int
	must.NoError(t, db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT version), COALESCE(MAX(version), 0)
		FROM ledger_migrations`).Scan(&rows, &distinct, &top))
	must.Eq(t, SchemaVersion, top)
	must.Eq(t, SchemaVersion, rows, must.Sprint("one ledger_migrations row per version"))
	must.Eq(t, SchemaVersion, distinct)
	must.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM ledger_state WHERE key = 'max_segment_ms'`).Scan(&state))
	must.Eq(t, 1, state)
}

// TestMigrationLockBoundedWait: while another session holds the migration
// lock, Open gives up after migrationLockWait with ErrMigrationLocked and
// a message that says what to look for; once it is released, Open
// migrates.
func TestMigrationLockBoundedWait(t *testing.T) {
	if pg == nil {
		t.Skipf("PostgreSQL NOT RUN: %v", pgMissing)
	}
	dsn := pg.NewDB(t)
	ctx := context.Background()
	holder, err := sql.Open("pgx", dsn)
	must.NoError(t, err)
	defer holder.Close()
	conn, err := holder.Conn(ctx)
	must.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey)
	must.NoError(t, err)

	old := migrationLockWait
	migrationLockWait = 300 * time.Millisecond
	t.Cleanup(func() { migrationLockWait = old })
	_, err = Open(ctx, DriverPostgres, dsn)
	must.ErrorIs(t, err, ErrMigrationLocked)
	must.ErrorContains(t, err, "another governor may be migrating the same database")
	var n int
	must.NoError(t, holder.QueryRow(`SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'segments'`).Scan(&n))
	must.Zero(t, n, must.Sprint("nothing migrated without the lock"))

	_, err = conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, migrationLockKey)
	must.NoError(t, err)
	db, err := Open(ctx, DriverPostgres, dsn)
	must.NoError(t, err)
	must.NoError(t, db.Close())
	checkMigrated(t, dsn)
}
