package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"time"
)

// HA configures high availability (governor/ha, docs/ha.md): several
// governors elect one leader through a Consul session lock; the leader
// acts, standbys serve reads and forward admissions to it. Without an ha
// block (Enabled false) the governor runs alone, as before.
type HA struct {
	// Enabled is set by an ha block or the -ha-consul-addr flag.
	Enabled bool
	// Consul is how the governor reaches Consul (address, token, TLS).
	Consul Consul
	// LockKey is the Consul KV key of the leader lock; every governor of
	// one cluster uses the same.
	LockKey string
	// SessionTTL is the Consul session's TTL (Consul: at least 10s). The
	// leader fences itself when its last renewal is older than this.
	SessionTTL time.Duration
	// LockDelay is Consul's lock-delay: after a session is invalidated
	// nobody may take the lock for this long, so writes the old leader
	// sent before its lease ended land first. At most 60s.
	LockDelay time.Duration
	// CheckTTL, when set, binds the session to a Consul TTL health check
	// of this TTL that the governor keeps passing: a dead leader loses the
	// lock within CheckTTL instead of 2×SessionTTL (0: no check).
	CheckTTL time.Duration
	// MemberID names this governor among the members (default: the host
	// name and the listen port).
	MemberID string
	// Advertise is the URL other governors forward admissions to when this
	// one leads (default: http(s)://<listen> when listen names a host).
	Advertise string
}

// Consul is how the governor reaches Consul.
type Consul struct {
	// Address is Consul's HTTP(S) URL (default $CONSUL_HTTP_ADDR or
	// http://127.0.0.1:8500).
	Address       string
	Token         string
	CACert        string
	ClientCert    string
	ClientKey     string
	TLSServerName string
}

// Defaults of the ha block (Consul's own lock defaults).
const (
	DefaultLockKey    = "allot/governor/leader"
	DefaultSessionTTL = 15 * time.Second
	DefaultLockDelay  = 15 * time.Second
	// MinSessionTTL is Consul's session_ttl_min.
	MinSessionTTL = 10 * time.Second
)

type fileHA struct {
	Consul     *fileConsul `hcl:"consul,block"`
	LockKey    *string     `hcl:"lock_key"`
	SessionTTL *string     `hcl:"session_ttl"`
	LockDelay  *string     `hcl:"lock_delay"`
	CheckTTL   *string     `hcl:"check_ttl"`
	MemberID   *string     `hcl:"member_id"`
	Advertise  *string     `hcl:"advertise"`
}

type fileConsul struct {
	Address       *string `hcl:"address"`
	Token         *string `hcl:"token"`
	CACert        *string `hcl:"ca_cert"`
	ClientCert    *string `hcl:"client_cert"`
	ClientKey     *string `hcl:"client_key"`
	TLSServerName *string `hcl:"tls_server_name"`
}

func defaultHA() HA {
	return HA{Consul: Consul{Address: "http://127.0.0.1:8500"}, LockKey: DefaultLockKey,
		SessionTTL: DefaultSessionTTL, LockDelay: DefaultLockDelay}
}

func (c *Config) applyHA(f *fileHA) []error {
	if f == nil {
		return nil
	}
	h := &c.HA
	h.Enabled = true
	if k := f.Consul; k != nil {
		setStr(&h.Consul.Address, k.Address)
		setStr(&h.Consul.Token, k.Token)
		setStr(&h.Consul.CACert, k.CACert)
		setStr(&h.Consul.ClientCert, k.ClientCert)
		setStr(&h.Consul.ClientKey, k.ClientKey)
		setStr(&h.Consul.TLSServerName, k.TLSServerName)
	}
	setStr(&h.LockKey, f.LockKey)
	setStr(&h.MemberID, f.MemberID)
	setStr(&h.Advertise, f.Advertise)
	var errs []error
	for name, d := range map[string]struct {
		dst *time.Duration
		src *string
	}{"session_ttl": {&h.SessionTTL, f.SessionTTL}, "lock_delay": {&h.LockDelay, f.LockDelay}, "check_ttl": {&h.CheckTTL, f.CheckTTL}} {
		if err := setDuration(d.dst, d.src); err != nil {
			errs = append(errs, fmt.Errorf("ha %s: %w", name, err))
		}
	}
	return errs
}

// resolveHA fills the defaults that depend on other settings once the
// file and flags are in: the member id and the advertise URL from the
// listen address.
func (c *Config) resolveHA(hostname func() (string, error)) {
	h := &c.HA
	if !h.Enabled {
		return
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return // Validate reports the listen address
	}
	if h.MemberID == "" {
		name, err := hostname()
		if err != nil || name == "" {
			name = "governor"
		}
		h.MemberID = name + "-" + port
	}
	if h.Advertise == "" && host != "" && !net.ParseIP(host).IsUnspecified() {
		scheme := "http"
		if c.TLS.Enabled() {
			scheme = "https"
		}
		h.Advertise = scheme + "://" + net.JoinHostPort(host, port)
	}
}

// validateHA checks the ha block. HA needs a ledger every governor can
// share (PostgreSQL) or none.
func (c *Config) validateHA() []error {
	h := c.HA
	if !h.Enabled {
		return nil
	}
	var errs []error
	if c.Ledger.Enabled() && c.Ledger.Driver != "postgres" {
		errs = append(errs, fmt.Errorf("ha: the ledger is a SQLite file (%s), which several governors cannot share; use a PostgreSQL ledger (ledger { driver = \"postgres\" dsn = \"...\" }) or none (no data_dir, no ledger path)", c.Ledger.Path))
	}
	if !httpURL(h.Consul.Address) {
		errs = append(errs, fmt.Errorf("ha consul address %q: must be an http(s) URL", h.Consul.Address))
	}
	if h.Advertise == "" {
		errs = append(errs, fmt.Errorf("ha advertise: required when listen %q names no single host: the URL other governors reach this one at", c.Listen))
	} else if !httpURL(h.Advertise) {
		errs = append(errs, fmt.Errorf("ha advertise %q: must be an http(s) URL", h.Advertise))
	}
	if h.LockKey == "" {
		errs = append(errs, fmt.Errorf("ha lock_key must not be empty"))
	}
	if h.SessionTTL < MinSessionTTL || h.SessionTTL > 24*time.Hour {
		errs = append(errs, fmt.Errorf("ha session_ttl %s: Consul takes 10s to 24h", h.SessionTTL))
	}
	if h.LockDelay <= 0 || h.LockDelay > time.Minute {
		errs = append(errs, fmt.Errorf("ha lock_delay %s: must be above 0 and at most 60s (Consul's cap)", h.LockDelay))
	}
	if h.CheckTTL != 0 && (h.CheckTTL < time.Second || h.CheckTTL > h.SessionTTL) {
		errs = append(errs, fmt.Errorf("ha check_ttl %s: must be 0 (no check) or between 1s and session_ttl %s", h.CheckTTL, h.SessionTTL))
	}
	return errs
}

// LeaseTTL is how long the leader's lease lasts after its last renewal:
// the check TTL when the session is bound to a check, else the session
// TTL.
func (h HA) LeaseTTL() time.Duration {
	if h.CheckTTL > 0 {
		return h.CheckTTL
	}
	return h.SessionTTL
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// osHostname is resolveHA's default host name source.
var osHostname = os.Hostname
