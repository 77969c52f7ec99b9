// Package auth authenticates the callers of the governor the way Nomad
// authenticates them: it resolves the caller's ACL token through Nomad's
// ACL API (with the caller's own token, never the governor's), compiles
// its policies with Nomad's own acl package, and caches the result for a
// short TTL. See README.md.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Defaults of Options.
const (
	DefaultTTL        = 10 * time.Second
	DefaultMaxEntries = 4096
	DefaultTimeout    = 10 * time.Second
)

// Options configure an Authenticator.
type Options struct {
	// Nomad is the base URL of Nomad's HTTP API.
	Nomad *url.URL
	// Client reaches Nomad (with the governor's TLS settings). It must not
	// add a token of its own: lookups carry the caller's token only.
	Client *http.Client
	// TTL is how long a resolved token (or a refusal) is reused: a revoked
	// token or a changed policy takes effect within it. Default 10s.
	TTL time.Duration
	// MaxEntries bounds the cache. Default 4096.
	MaxEntries int
	// Timeout bounds one resolution against Nomad. Default 10s.
	Timeout time.Duration
	// RequireClientCert refuses every request whose caller did not present
	// a verified client certificate to the governor: set it when Nomad
	// requires client certificates, so the governor's own never stands in
	// for a caller's.
	RequireClientCert bool
	// MetricsToken, when set, is a governor-local secret that may read every
	// series of /metrics (Prometheus' scrape token) and nothing else.
	MetricsToken string
	// Now is the clock (time.Now by default).
	Now func() time.Time
	// Log gets one debug line per resolution.
	Log hclog.Logger
}

// Authenticator resolves callers. It is safe for concurrent use.
type Authenticator struct {
	opts  Options
	nomad *nomadACL
	cache *cache
}

// New returns an Authenticator with the defaults filled in.
func New(opts Options) *Authenticator {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = hclog.NewNullLogger()
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: opts.Timeout}
	}
	return &Authenticator{opts: opts, nomad: &nomadACL{base: opts.Nomad, client: opts.Client}, cache: newCache(opts.MaxEntries)}
}

// Token returns the caller's secret exactly as Nomad 1.6.1 reads it
// (command/agent/http.go parseToken): X-Nomad-Token, trimmed, when set;
// otherwise the first word after "Bearer " in Authorization; otherwise "".
func Token(r *http.Request) string {
	if v := r.Header.Get("X-Nomad-Token"); v != "" {
		return strings.TrimSpace(v)
	}
	parts := strings.Split(r.Header.Get("Authorization"), " ")
	if len(parts) < 2 || strings.ToLower(parts[0]) != "bearer" {
		return ""
	}
	value := strings.TrimSpace(strings.Join(parts[1:], " "))
	return strings.TrimSpace(strings.Split(value, " ")[0])
}

// Authenticate resolves the caller of r. It returns a Caller, or an error
// that wraps ErrPermissionDenied (answer 403, see Status and Message) or
// ErrUnavailable (Nomad could not be asked). A Caller stored in r's
// context by NewContext is returned as is.
func (a *Authenticator) Authenticate(r *http.Request) (*Caller, error) {
	if c := FromContext(r.Context()); c != nil {
		return c, nil
	}
	if a.opts.RequireClientCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		return nil, ErrClientCertRequired
	}
	secret := Token(r)
	if m := a.opts.MetricsToken; m != "" && subtle.ConstantTimeCompare([]byte(m), []byte(secret)) == 1 {
		return &Caller{Name: "metrics_token", scrape: true}, nil
	}
	return a.Resolve(secret)
}

// Resolve resolves a secret ("" = anonymous), from the cache when a live
// answer is there.
func (a *Authenticator) Resolve(secret string) (*Caller, error) {
	key := sha256.Sum256([]byte(secret))
	if e, ok := a.cache.get(key, a.opts.Now()); ok {
		return e.caller, e.err
	}
	cl, leader := a.cache.join(key)
	if !leader {
		<-cl.done
		return cl.caller, cl.err
	}
	c, err := a.resolve(key, secret)
	a.cache.finish(key, cl, c, err)
	return c, err
}

// resolve asks Nomad and caches what is not a transient failure. The
// resolution runs on its own deadline, not the request's, because callers
// of the same secret may be waiting on it.
func (a *Authenticator) resolve(key [32]byte, secret string) (*Caller, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.Timeout)
	defer cancel()
	now := a.opts.Now()
	c, until, err := a.nomad.resolve(ctx, secret, now)
	if errors.Is(err, errACLDisabled) {
		c, err = &Caller{disabled: true}, nil
	}
	if err != nil && !errors.Is(err, ErrPermissionDenied) {
		a.opts.Log.Warn("cannot resolve a caller's token", "error", err)
		return nil, fmt.Errorf("resolving token: %w", err)
	}
	e := &entry{key: key, caller: c, err: err, until: now.Add(a.opts.TTL)}
	if !until.IsZero() && until.Before(e.until) {
		e.until = until
	}
	a.cache.put(e)
	a.opts.Log.Debug("resolved caller", "accessor", accessorOf(c), "type", typeOf(c), "error", err)
	return c, err
}

func accessorOf(c *Caller) string {
	if c == nil {
		return ""
	}
	return c.AccessorID
}

func typeOf(c *Caller) string {
	if c == nil {
		return ""
	}
	return c.Type
}

// Middleware authenticates each request once and stores the Caller in its
// context (see FromContext). A refusal is answered by deny and next is not
// called.
func (a *Authenticator) Middleware(next http.Handler, deny func(http.ResponseWriter, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := a.Authenticate(r)
		if err != nil {
			deny(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), c)))
	})
}
