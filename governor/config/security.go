package config

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// TLS is the governor's own listener TLS. With CertFile and KeyFile set
// the governor serves HTTPS only; with ClientCAFile set too, every caller
// must present a client certificate signed by that CA.
type TLS struct {
	CertFile     string
	KeyFile      string
	ClientCAFile string
}

// Enabled reports whether the listener serves TLS.
func (t TLS) Enabled() bool { return t.CertFile != "" || t.KeyFile != "" }

// HTTP bounds the governor's HTTP server. Streams (the event stream, logs
// and file streams, exec websockets, agent monitor, blocking queries) are
// exempt from ReadTimeout and WriteTimeout.
type HTTP struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from its headers to the last byte of
	// its answer.
	WriteTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long.
	IdleTimeout time.Duration
}

// Limits bound what one caller can make the governor hold.
type Limits struct {
	// MaxBodyBytes bounds the body of an admission request (413 above).
	MaxBodyBytes int64
	// MaxConcurrentAdmissions bounds admission requests served at once
	// (429 with Retry-After above).
	MaxConcurrentAdmissions int
}

// Auth configures how callers are authenticated (governor/auth).
type Auth struct {
	// CacheTTL is how long a resolved token is reused: a revoked token or a
	// changed policy takes effect within it.
	CacheTTL time.Duration
	// CacheSize bounds the number of cached tokens.
	CacheSize int
	// MetricsToken, when set, lets its holder read every /metrics series
	// (Prometheus' scrape token) and nothing else.
	MetricsToken string
}

// defaultHTTP, defaultLimits and defaultAuth are the defaults of Default().
func defaultHTTP() HTTP {
	return HTTP{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: 2 * time.Minute,
		IdleTimeout: 2 * time.Minute}
}

func defaultLimits() Limits {
	return Limits{MaxBodyBytes: 4 << 20, MaxConcurrentAdmissions: 64}
}

func defaultAuth() Auth { return Auth{CacheTTL: 10 * time.Second, CacheSize: 4096} }

// RequireClientCert reports whether Nomad requires client certificates
// (nomad.verify_https_client; by default whenever the governor itself
// presents one to Nomad). Then a caller without a verified certificate is
// refused: the governor's own certificate must not stand in for it.
func (n Nomad) RequireClientCert() bool {
	if n.VerifyHTTPSClient != nil {
		return *n.VerifyHTTPSClient
	}
	return n.ClientCert != ""
}

// validateSecurity reports the problems of the TLS, HTTP, limits and auth
// settings.
func (c *Config) validateSecurity() []error {
	var errs []error
	t := c.TLS
	if t.Enabled() && (t.CertFile == "" || t.KeyFile == "") {
		errs = append(errs, errors.New("tls: cert_file and key_file must be set together"))
	}
	if t.ClientCAFile != "" && !t.Enabled() {
		errs = append(errs, errors.New("tls: client_ca_file needs cert_file and key_file (client certificates need TLS)"))
	}
	for name, p := range map[string]string{"tls cert_file": t.CertFile, "tls key_file": t.KeyFile, "tls client_ca_file": t.ClientCAFile} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if c.Nomad.RequireClientCert() && t.ClientCAFile == "" {
		errs = append(errs, errors.New("nomad requires client certificates (nomad.client_cert is set or nomad.verify_https_client = true): "+
			"set tls { client_ca_file = ... } so callers present their own, or nomad { verify_https_client = false } if Nomad does not verify them"))
	}
	for name, d := range map[string]time.Duration{
		"http read_header_timeout": c.HTTP.ReadHeaderTimeout, "http read_timeout": c.HTTP.ReadTimeout,
		"http write_timeout": c.HTTP.WriteTimeout, "http idle_timeout": c.HTTP.IdleTimeout, "auth cache_ttl": c.Auth.CacheTTL,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	if c.Limits.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("limits max_body_bytes must be positive, got %d", c.Limits.MaxBodyBytes))
	}
	if c.Limits.MaxConcurrentAdmissions <= 0 {
		errs = append(errs, fmt.Errorf("limits max_concurrent_admissions must be positive, got %d", c.Limits.MaxConcurrentAdmissions))
	}
	if c.Auth.CacheSize <= 0 {
		errs = append(errs, fmt.Errorf("auth cache_size must be positive, got %d", c.Auth.CacheSize))
	}
	return errs
}

// The HCL shapes of the blocks above.
type fileTLS struct {
	CertFile     *string `hcl:"cert_file"`
	KeyFile      *string `hcl:"key_file"`
	ClientCAFile *string `hcl:"client_ca_file"`
}

type fileHTTP struct {
	ReadHeaderTimeout *string `hcl:"read_header_timeout"`
	ReadTimeout       *string `hcl:"read_timeout"`
	WriteTimeout      *string `hcl:"write_timeout"`
	IdleTimeout       *string `hcl:"idle_timeout"`
}

type fileLimits struct {
	MaxBodyBytes            *int64 `hcl:"max_body_bytes"`
	MaxConcurrentAdmissions *int   `hcl:"max_concurrent_admissions"`
}

type fileAuth struct {
	CacheTTL     *string `hcl:"cache_ttl"`
	CacheSize    *int    `hcl:"cache_size"`
	MetricsToken *string `hcl:"metrics_token"`
}

// applySecurity applies the tls, http, limits and auth blocks.
func (c *Config) applySecurity(f *fileConfig) []error {
	var errs []error
	if t := f.TLS; t != nil {
		setStr(&c.TLS.CertFile, t.CertFile)
		setStr(&c.TLS.KeyFile, t.KeyFile)
		setStr(&c.TLS.ClientCAFile, t.ClientCAFile)
	}
	if h := f.HTTP; h != nil {
		for name, d := range map[string]struct {
			dst *time.Duration
			src *string
		}{
			"http read_header_timeout": {&c.HTTP.ReadHeaderTimeout, h.ReadHeaderTimeout},
			"http read_timeout":        {&c.HTTP.ReadTimeout, h.ReadTimeout},
			"http write_timeout":       {&c.HTTP.WriteTimeout, h.WriteTimeout},
			"http idle_timeout":        {&c.HTTP.IdleTimeout, h.IdleTimeout},
		} {
			if err := setDuration(d.dst, d.src); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
	}
	if l := f.Limits; l != nil {
		if l.MaxBodyBytes != nil {
			c.Limits.MaxBodyBytes = *l.MaxBodyBytes
		}
		if l.MaxConcurrentAdmissions != nil {
			c.Limits.MaxConcurrentAdmissions = *l.MaxConcurrentAdmissions
		}
	}
	if a := f.Auth; a != nil {
		if err := setDuration(&c.Auth.CacheTTL, a.CacheTTL); err != nil {
			errs = append(errs, fmt.Errorf("auth cache_ttl: %w", err))
		}
		if a.CacheSize != nil {
			c.Auth.CacheSize = *a.CacheSize
		}
		setStr(&c.Auth.MetricsToken, a.MetricsToken)
	}
	return errs
}
