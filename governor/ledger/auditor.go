package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/hahttp"
)

// Authenticator resolves the caller of a request (governor/auth).
type Authenticator interface {
	Authenticate(r *http.Request) (*auth.Caller, error)
}

// Auditor records namespace meta changes (the allot.* keys: quotas,
// classes, weights): with their actor when they pass through the
// governor's proxy (Wrap), with actor unknown when Detect finds them in
// Nomad first. One mutex orders the two, so a change is recorded once.
// Under HA only the leader's auditor records: a standby's proxy forwards
// namespace writes to the leader, and Wrap records nothing for them.
type Auditor struct {
	DB   *DB
	Auth Authenticator
	Now  func() time.Time
	// MaxBody bounds the namespace bodies the hook reads (default 1 MiB).
	MaxBody int64

	mu sync.Mutex
}

// Wrap returns next with namespace writes (PUT/POST /v1/namespace[/name],
// DELETE /v1/namespace/name) recorded with the caller's token accessor and
// name once Nomad accepted them. A write next forwarded to the leader (it
// set hahttp.ForwardedHeader on r: this governor is a standby) is left to
// the leader's auditor, which sees the same caller. When next forwards
// the governor's own writes to the leader (proxy.Proxy.ForwardToLeader),
// the handler returned does too.
func (a *Auditor) Wrap(next http.Handler) http.Handler {
	h := a.wrap(next)
	if f, ok := next.(leaderForwarder); ok {
		return forwardingHandler{Handler: h, f: f}
	}
	return h
}

// leaderForwarder is proxy.Proxy's routing of the governor's own writes
// under HA (governor/server's LeaderForwarder).
type leaderForwarder interface {
	ForwardToLeader(w http.ResponseWriter, r *http.Request) bool
}

// forwardingHandler is the audited proxy, still forwarding to the leader.
type forwardingHandler struct {
	http.Handler
	f leaderForwarder
}

// ForwardToLeader forwards as the wrapped proxy does.
func (h forwardingHandler) ForwardToLeader(w http.ResponseWriter, r *http.Request) bool {
	return h.f.ForwardToLeader(w, r)
}

func (a *Auditor) wrap(next http.Handler) http.HandlerFunc {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := namespaceWrite(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		forwardedBy := r.Header.Get(hahttp.ForwardedHeader)
		var meta map[string]string
		if r.Method != http.MethodDelete {
			var err error
			if name, meta, err = a.readBody(r, name); err != nil {
				next.ServeHTTP(w, r)
				return
			}
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		if rec.status/100 != 2 || name == "" || r.Header.Get(hahttp.ForwardedHeader) != forwardedBy {
			return
		}
		actor, actorName := ActorUnknown, ""
		if c, err := a.Auth.Authenticate(r); err == nil && c != nil {
			actor, actorName = ActorOf(c)
		}
		_ = a.record(r.Context(), name, allotMeta(meta), r.Method == http.MethodDelete, actor, actorName, "through the governor")
	})
}

// ActorOf names caller c in the audit log: its token's accessor ID and
// name, "anonymous" (with the name, if any) without a token, or
// "acl-disabled" when Nomad's ACLs are off. Every writer of audit
// entries for a caller names it so.
func ActorOf(c *auth.Caller) (string, string) {
	switch {
	case c.ACLsDisabled():
		return "acl-disabled", ""
	case c.AccessorID == "":
		return "anonymous", c.Name
	default:
		return c.AccessorID, c.Name
	}
}

// namespaceWrite reports whether r writes a namespace, and its name when
// the path carries it.
func namespaceWrite(r *http.Request) (string, bool) {
	if !hahttp.NamespaceWrite(r.Method, r.URL.Path) {
		return "", false
	}
	if r.URL.Path == "/v1/namespace" {
		return "", true // the name is in the body
	}
	return strings.TrimPrefix(r.URL.Path, "/v1/namespace/"), true
}

// readBody reads the namespace from the body and puts the body back.
func (a *Auditor) readBody(r *http.Request, name string) (string, map[string]string, error) {
	max := a.MaxBody
	if max <= 0 {
		max = 1 << 20
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	if err != nil || int64(len(body)) > max {
		return "", nil, fmt.Errorf("reading namespace body: %v", err)
	}
	var ns api.Namespace
	if err := json.Unmarshal(body, &ns); err != nil {
		return "", nil, fmt.Errorf("decoding namespace body: %w", err)
	}
	if ns.Name != "" {
		name = ns.Name
	}
	return name, ns.Meta, nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status on its way out.
func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Detect compares every namespace's allot.* meta in Nomad with the last
// recorded and records each difference with actor unknown.
func (a *Auditor) Detect(ctx context.Context, nomad Nomad) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	nss, err := nomad.Namespaces(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, ns := range nss {
		seen[ns.Name] = true
		if err := a.record(ctx, ns.Name, allotMeta(ns.Meta), false, ActorUnknown, "", "detected in Nomad"); err != nil {
			return err
		}
	}
	known, err := a.DB.knownNamespaces(ctx)
	if err != nil {
		return err
	}
	for _, name := range known {
		if !seen[name] {
			if err := a.record(ctx, name, nil, true, ActorUnknown, "", "detected in Nomad"); err != nil {
				return err
			}
		}
	}
	return nil
}

// record appends an entry when ns's meta differs from the last recorded,
// and stores the new meta, in one transaction.
func (a *Auditor) record(ctx context.Context, ns string, meta map[string]string, deleted bool, actor, actorName, how string) error {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	d := a.DB
	return d.tx(ctx, func(tx *sql.Tx) error {
		old, had, err := d.storedMeta(ctx, tx, ns)
		if err != nil {
			return err
		}
		next := canonical(meta)
		if (deleted && !had) || (!deleted && had && old == next) {
			return nil
		}
		detail := how
		if !had {
			detail = "first seen, " + how
		}
		if deleted {
			next, detail = "", "namespace deleted, "+how
		}
		e := Entry{Time: now(), Kind: KindNamespaceMeta, Actor: actor, ActorName: actorName, Namespace: ns,
			Subject: changedKeys(old, next), Old: old, New: next, Detail: detail}
		if err := d.appendTx(ctx, tx, []Entry{e}); err != nil {
			return err
		}
		return d.storeMeta(ctx, tx, ns, next, deleted)
	})
}

func (d *DB) storedMeta(ctx context.Context, tx *sql.Tx, ns string) (string, bool, error) {
	var m string
	err := tx.QueryRowContext(ctx, d.q(`SELECT meta FROM namespace_meta WHERE namespace = ?`), ns).Scan(&m)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading recorded meta of %s: %w", ns, err)
	}
	return m, true, nil
}

func (d *DB) storeMeta(ctx context.Context, tx *sql.Tx, ns, meta string, deleted bool) error {
	var err error
	if deleted {
		_, err = tx.ExecContext(ctx, d.q(`DELETE FROM namespace_meta WHERE namespace = ?`), ns)
	} else {
		_, err = tx.ExecContext(ctx, d.q(`INSERT INTO namespace_meta (namespace, meta) VALUES (?, ?)
			ON CONFLICT (namespace) DO UPDATE SET meta = excluded.meta`), ns, meta)
	}
	if err != nil {
		return fmt.Errorf("recording meta of %s: %w", ns, err)
	}
	return nil
}

func (d *DB) knownNamespaces(ctx context.Context) ([]string, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT namespace FROM namespace_meta`)
	if err != nil {
		return nil, fmt.Errorf("listing recorded namespaces: %w", err)
	}
	var out []string
	err = scanAll(rows, func(sc func(...any) error) error {
		var n string
		if err := sc(&n); err != nil {
			return err
		}
		out = append(out, n)
		return nil
	})
	return out, err
}

// allotMeta keeps the allot.* keys: the governance settings.
func allotMeta(meta map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range meta {
		if strings.HasPrefix(k, "allot.") {
			out[k] = v
		}
	}
	return out
}

// canonical renders meta as sorted k=v lines.
func canonical(meta map[string]string) string {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + strconv.Quote(meta[k]) + "\n")
	}
	return b.String()
}

// changedKeys names the keys whose values differ between two canonical
// renderings.
func changedKeys(old, next string) string {
	a, b := lines(old), lines(next)
	var out []string
	for k, v := range b {
		if a[k] != v {
			out = append(out, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func lines(s string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}
