// Package ledger is the governor's durable record of who used which
// accelerators, for how long, what it cost, what sat idle, and who changed
// what. It keeps usage segments derived from Nomad's allocation lifecycles,
// capacity samples of every node pool and device model, and a hash-chained
// audit log, in one SQL schema that runs on embedded SQLite (default) and on
// PostgreSQL. See README.md and docs/ledger.md.
package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	// Drivers: "sqlite" (pure Go) and "pgx" (PostgreSQL).
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// Drivers the ledger runs on.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// ErrDriver is returned for a driver the ledger does not know.
var ErrDriver = errors.New("unknown ledger driver")

// DB is the ledger's database: a *sql.DB and the dialect of its driver.
type DB struct {
	sql    *sql.DB
	driver string
}

// Open opens the ledger database and runs every pending migration. For
// SQLite dsn is a file path; for PostgreSQL a connection string
// (postgres://user@host:port/db?sslmode=disable).
func Open(ctx context.Context, driver, dsn string) (*DB, error) {
	var (
		db  *sql.DB
		err error
	)
	switch driver {
	case DriverSQLite, "":
		driver = DriverSQLite
		db, err = sql.Open("sqlite", sqliteDSN(dsn))
		// One connection: SQLite has one writer, and a single connection
		// serialises the ledger's transactions instead of failing them
		// with SQLITE_BUSY.
		if err == nil {
			db.SetMaxOpenConns(1)
		}
	case DriverPostgres:
		db, err = sql.Open("pgx", dsn)
		if err == nil {
			db.SetMaxOpenConns(8)
		}
	default:
		return nil, fmt.Errorf("%w %q (want %s or %s)", ErrDriver, driver, DriverSQLite, DriverPostgres)
	}
	if err != nil {
		return nil, fmt.Errorf("opening ledger database (%s): %w", driver, err)
	}
	d := &DB{sql: db, driver: driver}
	if err := d.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
}

// sqliteDSN turns a file path into a modernc.org/sqlite DSN: WAL journal,
// full sync (a committed transaction survives kill -9 and power loss), and
// a busy timeout for a second process reading the same file.
func sqliteDSN(path string) string {
	if strings.HasPrefix(path, "file:") || path == ":memory:" {
		return path
	}
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
}

// Close closes the database.
func (d *DB) Close() error { return d.sql.Close() }

// Driver returns DriverSQLite or DriverPostgres.
func (d *DB) Driver() string { return d.driver }

// SQL returns the underlying handle (tests and benchmarks).
func (d *DB) SQL() *sql.DB { return d.sql }

// q rewrites a query written with ? placeholders and the functions
// least/greatest for the driver: PostgreSQL numbers its placeholders,
// SQLite spells least/greatest min/max.
func (d *DB) q(query string) string {
	if d.driver == DriverSQLite {
		r := strings.NewReplacer("least(", "min(", "greatest(", "max(")
		return r.Replace(query)
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// tx runs fn in one transaction, committed when fn returns nil.
func (d *DB) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("beginning ledger transaction: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing ledger transaction: %w", err)
	}
	return nil
}

// getState reads a value of the ledger_state table ("" when absent).
func (d *DB) getState(ctx context.Context, q querier, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, d.q(`SELECT value FROM ledger_state WHERE key = ?`), key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading ledger state %s: %w", key, err)
	}
	return v, nil
}

// setState writes a value of the ledger_state table.
func (d *DB) setState(ctx context.Context, q querier, key, value string) error {
	_, err := q.ExecContext(ctx, d.q(`INSERT INTO ledger_state (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`), key, value)
	if err != nil {
		return fmt.Errorf("writing ledger state %s: %w", key, err)
	}
	return nil
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
