// Package console is the governance console the governor serves at /ui/:
// server-rendered html/template pages (htmx only refreshes tables), signed
// in with the user's Nomad ACL token, every number read from the
// governor's own /allot/v1 API in process with that token, so a page shows
// exactly what the API shows the same token. See README.md.
package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/ledger"
)

// Prefix is where the console is mounted.
const Prefix = "/ui/"

// Defaults of Options.
const (
	DefaultSessionTTL  = 12 * time.Hour
	DefaultMaxSessions = 10000
)

// Authenticator resolves the caller of a request (governor/auth).
type Authenticator interface {
	Authenticate(r *http.Request) (*auth.Caller, error)
}

// Options wire the console into the governor.
type Options struct {
	// API is the governor's handler of /allot/v1/ (in process): every view
	// reads through it with the session's token.
	API http.Handler
	// Queue, when set, returns /allot/v1/queue's answer for a caller
	// without the JSON round trip (the API's own function; 10,000 queued
	// jobs made encoding and decoding most of the queue page's cost).
	// Errors should be *APIError with the API's status.
	Queue func(c *auth.Caller) (allotapi.Queue, error)
	// Request gives the request of a queued job shown on a page, when
	// Queue leaves them out (nil: Queue's entries carry them).
	Request func(ns, id string) map[string]int64
	// ReasonCheck gives the structured failing check of a queued job shown
	// on a page (allotapi.QueueEntry.ReasonCheck, redacted for the caller),
	// when Queue leaves them out; nil when the job's current reason is not
	// reason or is not that check's text (the reason is then shown as
	// written).
	ReasonCheck func(c *auth.Caller, ns, id, reason string) *allotapi.Check
	// Nomad is the governor's /v1/ proxy: writes (quota, job actions) and
	// Nomad reads (a tenant's jobs, allocations) go through it with the
	// session's token, so Nomad decides and the ledger audits them.
	Nomad http.Handler
	// Auth resolves tokens exactly as the API does.
	Auth Authenticator
	// JobPool returns the node pool of a job the API already showed the
	// caller ("" when unknown); the queue view filters on it.
	JobPool func(ns, id string) string
	// Audit appends an entry to the ledger's audit chain (nil: the
	// governor keeps no audit log; releases say they were not audited).
	Audit func(ctx context.Context, e ledger.Entry) error
	// SessionTTL is a session's absolute lifetime (default 12h).
	SessionTTL time.Duration
	// MaxSessions bounds the session store (default 10,000); the least
	// recently used session goes first.
	MaxSessions int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	Log hclog.Logger
}

// Console serves /ui/. It is safe for concurrent use.
type Console struct {
	opts     Options
	sessions *sessions
	pages    map[string]*template.Template
	views    []View
	static   http.Handler
}

// New parses the embedded templates and returns the console.
func New(opts Options) (*Console, error) {
	if opts.API == nil || opts.Auth == nil {
		return nil, errors.New("console: API and Auth are required")
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = DefaultSessionTTL
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = hclog.NewNullLogger()
	}
	if opts.JobPool == nil {
		opts.JobPool = func(string, string) string { return "" }
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, fmt.Errorf("console: static assets: %w", err)
	}
	c := &Console{opts: opts, sessions: newSessions(opts.SessionTTL, opts.MaxSessions, opts.Now), pages: pages,
		static: http.StripPrefix(Prefix+"static/", http.FileServer(http.FS(sub)))}
	c.views = c.viewTable()
	for _, v := range c.views {
		if _, ok := pages[v.Template]; !ok && v.Template != "" {
			return nil, fmt.Errorf("console: view %q: no template %q", v.Path, v.Template)
		}
	}
	return c, nil
}

// ServeHTTP serves everything under /ui/.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w)
	path := strings.TrimPrefix(r.URL.Path, Prefix)
	switch {
	case strings.HasPrefix(path, "static/"):
		w.Header().Set("Cache-Control", "public, max-age=3600")
		c.static.ServeHTTP(w, r)
	case path == "signin":
		c.signin(w, r)
	case path == "signout":
		c.signout(w, r)
	default:
		c.serveView(w, r, path)
	}
}

// serveView resolves the session, checks writes, and dispatches to the
// view whose path matches (the longest prefix for paths ending in "/").
func (c *Console) serveView(w http.ResponseWriter, r *http.Request, path string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q, ok := c.begin(w, r)
	if !ok {
		return
	}
	if r.Method == http.MethodPost && !c.checkWrite(w, q) {
		return
	}
	if v := c.route(path); v != nil {
		q.View = v
		v.Serve(w, q)
		return
	}
	c.fail(w, q, http.StatusNotFound, q.L.T("err.notfound"))
}

// route finds the view of path.
func (c *Console) route(path string) *View {
	var best *View
	for i := range c.views {
		v := &c.views[i]
		switch {
		case v.Path == path:
			return v
		case strings.HasSuffix(v.Path, "/") && strings.HasPrefix(path, v.Path):
			if best == nil || len(v.Path) > len(best.Path) {
				best = v
			}
		}
	}
	return best
}

// secure sets the headers every answer carries: no inline script or
// style, no framing, no sniffing, no caching of pages.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}
