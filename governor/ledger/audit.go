package ledger

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Audit kinds. Decisions are "decision:<kind>" (preemption, requeue, hold,
// stop, blocked).
const (
	KindNamespaceMeta = "namespace-meta"
	KindDecision      = "decision:"
)

// ActorUnknown is the actor of a change the governor did not see made
// (written straight to Nomad).
const ActorUnknown = "unknown"

// ErrTampered is returned by Verify when the chain does not hold.
var ErrTampered = errors.New("audit chain broken")

// Entry is one audit row. Hash = sha256(PrevHash ‖ the row's fields), so
// changing, inserting or deleting a row breaks every later link.
type Entry struct {
	Seq       int64     `json:"seq"`
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"`
	Actor     string    `json:"actor"`
	ActorName string    `json:"actor_name,omitempty"`
	Namespace string    `json:"namespace"`
	Subject   string    `json:"subject"`
	Old       string    `json:"old,omitempty"`
	New       string    `json:"new,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	PrevHash  string    `json:"prev_hash"`
	Hash      string    `json:"hash"`
}

// digest is the entry's hash over its previous hash and its fields, each
// length-prefixed so no two entries share an encoding.
func (e Entry) digest() string {
	h := sha256.New()
	for _, f := range []string{e.PrevHash, strconv.FormatInt(e.Seq, 10), strconv.FormatInt(e.Time.UnixMilli(), 10),
		e.Kind, e.Actor, e.ActorName, e.Namespace, e.Subject, e.Old, e.New, e.Detail} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Append adds entries to the chain in one transaction, each linked to the
// one before it. Seq and the hashes are set here.
func (d *DB) Append(ctx context.Context, entries ...Entry) error {
	if len(entries) == 0 {
		return nil
	}
	return d.tx(ctx, func(tx *sql.Tx) error { return d.appendTx(ctx, tx, entries) })
}

func (d *DB) appendTx(ctx context.Context, tx *sql.Tx, entries []Entry) error {
	seq, prev, err := d.head(ctx, tx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		seq++
		e.Seq, e.PrevHash = seq, prev
		e.Time = e.Time.Truncate(time.Millisecond)
		e.Hash = e.digest()
		_, err := tx.ExecContext(ctx, d.q(`INSERT INTO audit (seq, ts_ms, kind, actor, actor_name, namespace, subject,
			old_value, new_value, detail, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			e.Seq, e.Time.UnixMilli(), e.Kind, e.Actor, e.ActorName, e.Namespace, e.Subject, e.Old, e.New, e.Detail,
			e.PrevHash, e.Hash)
		if err != nil {
			return fmt.Errorf("appending audit entry %d: %w", seq, err)
		}
		prev = e.Hash
	}
	return nil
}

// head returns the last entry's sequence number and hash. A concurrent
// appender (a second governor on the same PostgreSQL) fails on the
// primary key and retries its transaction.
func (d *DB) head(ctx context.Context, q querier) (int64, string, error) {
	var seq int64
	var hash string
	err := q.QueryRowContext(ctx, `SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1`).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("reading the audit chain's head: %w", err)
	}
	return seq, hash, nil
}

// AuditQuery selects audit entries.
type AuditQuery struct {
	Since, Until time.Time
	// Namespaces, when not nil, keeps entries of those namespaces only.
	Namespaces []string
	// Kind keeps entries whose kind starts with it.
	Kind  string
	Limit int
	// Newest makes Limit keep the newest entries instead of the oldest
	// (they are still returned oldest first).
	Newest bool
}

// Entries returns the entries that match q, oldest first.
func (d *DB) Entries(ctx context.Context, q AuditQuery) ([]Entry, error) {
	where, args := []string{"1 = 1"}, []any{}
	if !q.Since.IsZero() {
		where, args = append(where, "ts_ms >= ?"), append(args, q.Since.UnixMilli())
	}
	if !q.Until.IsZero() {
		where, args = append(where, "ts_ms < ?"), append(args, q.Until.UnixMilli())
	}
	if q.Kind != "" {
		where, args = append(where, "kind LIKE ?"), append(args, q.Kind+"%")
	}
	if q.Namespaces != nil {
		if len(q.Namespaces) == 0 {
			return []Entry{}, nil
		}
		where = append(where, "namespace IN ("+strings.TrimSuffix(strings.Repeat("?,", len(q.Namespaces)), ",")+")")
		for _, ns := range q.Namespaces {
			args = append(args, ns)
		}
	}
	query := `SELECT seq, ts_ms, kind, actor, actor_name, namespace, subject, old_value, new_value, detail, prev_hash, hash
		FROM audit WHERE ` + strings.Join(where, " AND ") + ` ORDER BY seq`
	newest := q.Newest && q.Limit > 0
	if newest {
		query += " DESC"
	}
	if q.Limit > 0 {
		query += " LIMIT " + strconv.Itoa(q.Limit)
	}
	rows, err := d.sql.QueryContext(ctx, d.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("reading audit entries: %w", err)
	}
	es, err := scanEntries(rows)
	if newest {
		for i, j := 0, len(es)-1; i < j; i, j = i+1, j-1 {
			es[i], es[j] = es[j], es[i]
		}
	}
	return es, err
}

func scanEntries(rows *sql.Rows) ([]Entry, error) {
	out := []Entry{}
	err := scanAll(rows, func(sc func(...any) error) error {
		var e Entry
		var ms int64
		if err := sc(&e.Seq, &ms, &e.Kind, &e.Actor, &e.ActorName, &e.Namespace, &e.Subject, &e.Old, &e.New,
			&e.Detail, &e.PrevHash, &e.Hash); err != nil {
			return err
		}
		e.Time = time.UnixMilli(ms).UTC()
		out = append(out, e)
		return nil
	})
	return out, err
}

// Verify walks the whole chain and returns ErrTampered, naming the first
// entry that does not hold, when a row was changed, inserted or deleted.
// It returns the number of entries checked.
func (d *DB) Verify(ctx context.Context) (int, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT seq, ts_ms, kind, actor, actor_name, namespace, subject, old_value,
		new_value, detail, prev_hash, hash FROM audit ORDER BY seq`)
	if err != nil {
		return 0, fmt.Errorf("reading the audit chain: %w", err)
	}
	all, err := scanEntries(rows)
	if err != nil {
		return 0, err
	}
	prev := ""
	for i, e := range all {
		switch {
		case e.Seq != int64(i+1):
			return i, fmt.Errorf("%w: entry %d follows entry %d (a row was deleted or inserted)", ErrTampered, e.Seq, i)
		case e.PrevHash != prev:
			return i, fmt.Errorf("%w: entry %d does not link to entry %d", ErrTampered, e.Seq, e.Seq-1)
		case e.digest() != e.Hash:
			return i, fmt.Errorf("%w: entry %d was changed after it was written", ErrTampered, e.Seq)
		}
		prev = e.Hash
	}
	return len(all), nil
}
