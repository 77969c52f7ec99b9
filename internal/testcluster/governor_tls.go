package testcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/allot-sh/allot/internal/nomadagent"
	"github.com/allot-sh/allot/internal/proc"
)

// GovernorTLS are the files of a governor serving HTTPS that requires
// client certificates: its own certificate and the CA that signs callers'.
type GovernorTLS struct {
	CA *CA
	// ClientCert and ClientKey are a client certificate the CA signed, used
	// by the governor's health check (and available to tests).
	ClientCert, ClientKey string
}

// StartGovernorTLS is StartGovernor with the governor serving HTTPS and
// requiring client certificates signed by a fresh CA: it writes a config
// file with the tls block (extraConfig is appended to it) and waits until
// /readyz answers over mutual TLS. Addr is https://.
func (c *Cluster) StartGovernorTLS(extraConfig string, args ...string) (*Governor, *GovernorTLS) {
	c.t.Helper()
	ca := NewCA(c.t)
	cert, key := ca.Issue("governor", false)
	gt := &GovernorTLS{CA: ca}
	gt.ClientCert, gt.ClientKey = ca.Issue("health-check", true)
	cfg := filepath.Join(c.Dir, "governor-tls.hcl")
	body := fmt.Sprintf("tls {\n  cert_file = %q\n  key_file = %q\n  client_ca_file = %q\n}\n%s", cert, key, ca.CertFile, extraConfig)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	bin := filepath.Join(c.Dir, "allot-governor")
	if err := GoBuild("./governor", bin); err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	ports, err := nomadagent.FreePorts(1)
	if err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", ports[0])
	g := &Governor{Addr: "https://" + listen, LogPath: filepath.Join(c.Dir, "governor-tls.log"), t: c.t, bin: bin,
		args: append([]string{"-nomad-addr", c.Addr(), "-listen", listen, "-log-level", "debug", "-config", cfg}, args...)}
	c.t.Cleanup(g.cleanup)
	p, err := proc.Start(g.bin, g.args, []string{"NOMAD_ADDR=", "NOMAD_TOKEN="}, g.LogPath)
	if err != nil {
		c.t.Fatalf("testcluster: starting governor: %v", err)
	}
	g.p = p
	gt.waitHealthy(c, g)
	return g, gt
}

// Client returns an HTTP client that trusts the CA and presents the
// client certificate certFile/keyFile (none when certFile is "").
func (gt *GovernorTLS) Client(certFile, keyFile string) (*http.Client, error) {
	pem, err := os.ReadFile(gt.CA.CertFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}, nil
}

func (gt *GovernorTLS) waitHealthy(c *Cluster, g *Governor) {
	c.t.Helper()
	client, err := gt.Client(gt.ClientCert, gt.ClientKey)
	if err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = Poll(ctx, 100*time.Millisecond, func() error {
		select {
		case <-g.p.Exited():
			return fmt.Errorf("governor exited")
		default:
		}
		resp, err := client.Get(g.Addr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		c.t.Fatalf("testcluster: governor (TLS) not healthy: %v; log:\n%s", err, tail(readFile(g.LogPath), 40))
	}
}
