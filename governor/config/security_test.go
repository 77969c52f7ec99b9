package config

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestSecurityDefaults(t *testing.T) {
	c, err := Load(nil, noEnv, io.Discard)
	must.NoError(t, err)
	must.False(t, c.TLS.Enabled())
	must.Eq(t, HTTP{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: 2 * time.Minute,
		IdleTimeout: 2 * time.Minute}, c.HTTP)
	must.Eq(t, Limits{MaxBodyBytes: 4 << 20, MaxConcurrentAdmissions: 64}, c.Limits)
	must.Eq(t, Auth{CacheTTL: 10 * time.Second, CacheSize: 4096}, c.Auth)
	must.False(t, c.Nomad.RequireClientCert())
}

// pemFiles writes placeholder cert, key and CA files (the config only
// checks they exist; the agent loads them).
func pemFiles(t *testing.T) (cert, key, ca string) {
	dir := t.TempDir()
	for _, n := range []string{"cert.pem", "key.pem", "ca.pem"} {
		must.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600))
	}
	return filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "ca.pem")
}

func TestSecurityBlocks(t *testing.T) {
	cert, key, ca := pemFiles(t)
	p := writeFile(t, `
tls {
  cert_file      = "`+cert+`"
  key_file       = "`+key+`"
  client_ca_file = "`+ca+`"
}
http {
  read_header_timeout = "3s"
  read_timeout        = "20s"
  write_timeout       = "30s"
  idle_timeout        = "40s"
}
limits {
  max_body_bytes            = 1048576
  max_concurrent_admissions = 8
}
auth {
  cache_ttl     = "5s"
  cache_size    = 100
  metrics_token = "scrape"
}
nomad {
  client_cert = "/etc/nomad/cli.pem"
  client_key  = "/etc/nomad/cli-key.pem"
}
`)
	c, err := Load([]string{"-config", p}, noEnv, io.Discard)
	must.NoError(t, err)
	must.Eq(t, TLS{CertFile: cert, KeyFile: key, ClientCAFile: ca}, c.TLS)
	must.Eq(t, HTTP{ReadHeaderTimeout: 3 * time.Second, ReadTimeout: 20 * time.Second, WriteTimeout: 30 * time.Second,
		IdleTimeout: 40 * time.Second}, c.HTTP)
	must.Eq(t, Limits{MaxBodyBytes: 1 << 20, MaxConcurrentAdmissions: 8}, c.Limits)
	must.Eq(t, Auth{CacheTTL: 5 * time.Second, CacheSize: 100, MetricsToken: "scrape"}, c.Auth)
	must.True(t, c.Nomad.RequireClientCert(), must.Sprint("the governor's own client cert means Nomad verifies them"))
}

// TestAudit13_NomadClientCertNeedsCallerCerts: audit #13, the governor's
// mTLS identity must not serve every caller. A configuration where Nomad
// requires client certificates but the governor would accept callers
// without one is refused at start.
func TestAudit13_NomadClientCertNeedsCallerCerts(t *testing.T) {
	cert, key, _ := pemFiles(t)
	cases := map[string]struct {
		file string
		want string
	}{
		"client cert without a listener CA": {
			file: `nomad { client_cert = "c.pem" }`,
			want: "nomad requires client certificates",
		},
		"verify_https_client without a listener CA": {
			file: `nomad { verify_https_client = true }`,
			want: "set tls { client_ca_file",
		},
		"listener CA without listener TLS": {
			file: `tls { client_ca_file = "ca.pem" }`,
			want: "client_ca_file needs cert_file and key_file",
		},
		"cert without key": {
			file: `tls { cert_file = "` + cert + `" }`,
			want: "cert_file and key_file must be set together",
		},
		"missing files": {
			file: "tls {\n cert_file = \"/nonexistent/c.pem\"\n key_file = \"" + key + "\"\n}\n",
			want: "tls cert_file",
		},
		"bad timeouts and limits": {
			file: "http { idle_timeout = \"0s\" }\nlimits { max_body_bytes = 0 }\nauth { cache_size = -1 }\n",
			want: "http idle_timeout must be positive",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load([]string{"-config", writeFile(t, tc.file)}, noEnv, io.Discard)
			must.ErrorContains(t, err, tc.want)
		})
	}
	t.Run("explicitly off", func(t *testing.T) {
		c, err := Load([]string{"-config", writeFile(t, `nomad {
  client_cert         = "c.pem"
  verify_https_client = false
}`)}, noEnv, io.Discard)
		must.NoError(t, err)
		must.False(t, c.Nomad.RequireClientCert())
	})
}
