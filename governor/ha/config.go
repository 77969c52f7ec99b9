// Package ha elects one leader among several allot-governor processes with
// a Consul session lock, and fences the leader on a monotonic lease: the
// leader stops acting as soon as its session may have been invalidated,
// without waiting for Consul to tell it so. Every term carries an epoch that
// increases strictly from one leader to the next. README.md explains the
// design and why it is safe.
package ha

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// Defaults and Consul's own bounds.
const (
	// DefaultKey is the lock key in Consul's KV store.
	DefaultKey = "allot/governor/leader"
	// DefaultSessionTTL is the session TTL (Kubernetes' lease duration as
	// Kueue uses it, and Nomad's Variables lock default).
	DefaultSessionTTL = 15 * time.Second
	// DefaultLockDelay is how long Consul refuses the lock after a session
	// holding it was invalidated (Consul's default).
	DefaultLockDelay = 15 * time.Second
	// DefaultAcquireRetry is how often a standby retries the lock while the
	// key is free but Consul still refuses it (lock-delay).
	DefaultAcquireRetry = 200 * time.Millisecond
	// DefaultRetryInterval is the pause after a failed Consul call before
	// the campaign starts over.
	DefaultRetryInterval = 2 * time.Second

	// MinSessionTTL and MaxSessionTTL are Consul's bounds for a session TTL.
	MinSessionTTL = 10 * time.Second
	MaxSessionTTL = 24 * time.Hour
	// MaxLockDelay is Consul's cap on lock-delay (larger values are cut).
	MaxLockDelay = 60 * time.Second
	// MinCheckTTL is the shortest check TTL accepted.
	MinCheckTTL = time.Second
)

// Config configures an Elector. Zero values take the defaults above;
// Validate reports every problem at once.
type Config struct {
	// Address is Consul's HTTP API: "host:port" or a URL
	// ("https://127.0.0.1:8501").
	Address string
	// Token is the Consul ACL token (needs key write on Key and its
	// "-members/" prefix, session write, and agent check write with
	// CheckTTL).
	Token string
	// TLS configures HTTPS to Consul; an https:// Address or any TLS
	// field turns it on.
	TLS TLSConfig
	// Key is the lock key (default DefaultKey). Members register under
	// Key + "-members/".
	Key string
	// SessionTTL is the session's TTL (default 15s, at least 10s).
	SessionTTL time.Duration
	// LockDelay is the session's lock-delay (default 15s, at most 60s):
	// after the session is invalidated nobody can take the lock for this
	// long. A leader's write must finish within LockDelay of its lease
	// deadline for the fence to hold (README.md).
	LockDelay time.Duration
	// CheckTTL, when set, also binds the session to a Consul TTL health
	// check of that TTL on the agent at Address, which the elector keeps
	// passing. A dead leader's check turns critical after CheckTTL and its
	// session is invalidated then, so a crash fails over in about
	// CheckTTL + LockDelay instead of up to 2 × SessionTTL + LockDelay.
	CheckTTL time.Duration
	// Margin is subtracted from every lease bound to absorb clock-rate
	// differences between this host and Consul's servers. Default: a tenth
	// of the shortest bound (SessionTTL, or CheckTTL when set).
	Margin time.Duration
	// MemberID names this governor (letters, digits, '.', '_', ':', '-');
	// default "<hostname>-<pid>".
	MemberID string
	// AdvertiseURL is this governor's HTTP address, stored in the lock's
	// value so standbys can forward to the leader (Member.Endpoint's
	// rules).
	AdvertiseURL string
	// RenewInterval is how often the session is renewed and the check
	// updated. Default: a third of SessionTTL, or a quarter of CheckTTL.
	RenewInterval time.Duration
	// AcquireRetry is how often a standby retries a free lock that Consul
	// still refuses (lock-delay); default 200ms.
	AcquireRetry time.Duration
	// RetryInterval is the pause after a failed Consul call; default 2s.
	RetryInterval time.Duration
}

// TLSConfig is how the elector reaches Consul over HTTPS.
type TLSConfig struct {
	// CAFile verifies Consul's certificate (default: the system pool).
	CAFile string
	// CertFile and KeyFile are a client certificate, for Consul's
	// verify_incoming.
	CertFile string
	KeyFile  string
	// ServerName is the name expected in Consul's certificate.
	ServerName string
}

// enabled reports whether any TLS setting is given.
func (t TLSConfig) enabled() bool {
	return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != ""
}

var memberIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Key == "" {
		c.Key = DefaultKey
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.LockDelay == 0 {
		c.LockDelay = DefaultLockDelay
	}
	if c.Margin == 0 {
		c.Margin = c.shortestBound() / 10
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = c.SessionTTL / 3
		if c.CheckTTL > 0 {
			c.RenewInterval = c.CheckTTL / 4
		}
	}
	if c.AcquireRetry == 0 {
		c.AcquireRetry = DefaultAcquireRetry
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = DefaultRetryInterval
	}
	if c.MemberID == "" {
		host, _ := os.Hostname()
		c.MemberID = fmt.Sprintf("%s-%d", sanitizeID(host), os.Getpid())
	}
	return c
}

// shortestBound is the shortest time after a renewal at which Consul may
// invalidate the session.
func (c Config) shortestBound() time.Duration {
	if c.CheckTTL > 0 && c.CheckTTL < c.SessionTTL {
		return c.CheckTTL
	}
	return c.SessionTTL
}

// Validate reports every problem of a config with defaults applied.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Address == "" {
		add("ha: consul address is required")
	}
	if c.Key == "" || strings.HasPrefix(c.Key, "/") || strings.HasSuffix(c.Key, "/") {
		add("ha: lock key %q must be non-empty and not start or end with '/'", c.Key)
	}
	if c.SessionTTL < MinSessionTTL || c.SessionTTL > MaxSessionTTL {
		add("ha: session TTL %s must be between %s and %s (Consul's bounds)", c.SessionTTL, MinSessionTTL, MaxSessionTTL)
	}
	if c.LockDelay <= 0 || c.LockDelay > MaxLockDelay {
		add("ha: lock-delay %s must be above 0 and at most %s", c.LockDelay, MaxLockDelay)
	}
	if c.CheckTTL != 0 && (c.CheckTTL < MinCheckTTL || c.CheckTTL > c.SessionTTL) {
		add("ha: check TTL %s must be between %s and the session TTL %s", c.CheckTTL, MinCheckTTL, c.SessionTTL)
	}
	if c.Margin < 0 || c.Margin >= c.shortestBound()/2 {
		add("ha: margin %s must be at least 0 and under half of %s", c.Margin, c.shortestBound())
	}
	if c.RenewInterval <= 0 || c.RenewInterval >= c.shortestBound()-c.Margin {
		add("ha: renew interval %s must be above 0 and under the lease (%s minus margin %s)",
			c.RenewInterval, c.shortestBound(), c.Margin)
	}
	if c.AcquireRetry <= 0 || c.RetryInterval <= 0 {
		add("ha: acquire retry %s and retry interval %s must be above 0", c.AcquireRetry, c.RetryInterval)
	}
	if !memberIDPattern.MatchString(c.MemberID) {
		add("ha: member id %q must be 1-128 letters, digits, '.', '_', ':' or '-'", c.MemberID)
	}
	if c.AdvertiseURL != "" {
		if _, err := (Member{URL: c.AdvertiseURL}).Endpoint(); err != nil {
			errs = append(errs, err)
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		add("ha: tls cert and key files must be given together")
	}
	return errors.Join(errs...)
}

// sanitizeID maps a host name onto the member id alphabet.
func sanitizeID(s string) string {
	out := []rune(s)
	for i, r := range out {
		if !strings.ContainsRune("._:-", r) && !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z') && !('0' <= r && r <= '9') {
			out[i] = '_'
		}
	}
	if len(out) == 0 {
		return "governor"
	}
	if len(out) > 100 {
		out = out[:100]
	}
	return string(out)
}
