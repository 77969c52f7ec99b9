package agent

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/internal/testcluster"
)

// serveTLS serves a handler that echoes the verified client's name with
// the listener TLS of c, and returns its address.
func serveTLS(t *testing.T, c config.TLS) string {
	tc, err := listenerTLS(c)
	must.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	hs := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := "none"
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			name = r.TLS.VerifiedChains[0][0].Subject.CommonName
		}
		_, _ = io.WriteString(w, name)
	}), config.HTTP{ReadHeaderTimeout: time.Second, IdleTimeout: time.Second}, tc, hclog.NewNullLogger())
	go func() { _ = serve(hs, ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "https://" + ln.Addr().String()
}

func client(t *testing.T, caFile, certFile, keyFile string) *http.Client {
	pem, err := os.ReadFile(caFile)
	must.NoError(t, err)
	pool := x509.NewCertPool()
	must.True(t, pool.AppendCertsFromPEM(pem))
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		must.NoError(t, err)
		tc.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
}

// TestAudit13_TLSListener: audit #13, the governor serves HTTPS, and with
// a client CA only to callers that present a certificate it signed.
func TestAudit13_TLSListener(t *testing.T) {
	ca := testcluster.NewCA(t)
	other := testcluster.NewCA(t)
	srvCert, srvKey := ca.Issue("governor", false)
	cliCert, cliKey := ca.Issue("alice", true)
	strangerCert, strangerKey := other.Issue("mallory", true)

	t.Run("server TLS only", func(t *testing.T) {
		addr := serveTLS(t, config.TLS{CertFile: srvCert, KeyFile: srvKey})
		resp, err := client(t, ca.CertFile, "", "").Get(addr)
		must.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		must.Eq(t, "none", string(body))
		resp, err = http.Get("http" + addr[len("https"):])
		must.NoError(t, err)
		resp.Body.Close()
		must.Eq(t, http.StatusBadRequest, resp.StatusCode, must.Sprint("plain HTTP is not served"))
	})
	t.Run("client certificates required", func(t *testing.T) {
		addr := serveTLS(t, config.TLS{CertFile: srvCert, KeyFile: srvKey, ClientCAFile: ca.CertFile})
		_, err := client(t, ca.CertFile, "", "").Get(addr)
		must.Error(t, err, must.Sprint("no client certificate"))
		_, err = client(t, ca.CertFile, strangerCert, strangerKey).Get(addr)
		must.Error(t, err, must.Sprint("a certificate from another CA"))
		resp, err := client(t, ca.CertFile, cliCert, cliKey).Get(addr)
		must.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		must.Eq(t, "alice", string(body))
	})
	t.Run("bad files", func(t *testing.T) {
		_, err := listenerTLS(config.TLS{CertFile: srvCert, KeyFile: cliKey})
		must.ErrorContains(t, err, "loading the listener's certificate")
		_, err = listenerTLS(config.TLS{CertFile: srvCert, KeyFile: srvKey, ClientCAFile: srvKey})
		must.ErrorContains(t, err, "no PEM certificate")
	})
	tc, err := listenerTLS(config.TLS{})
	must.NoError(t, err)
	must.Nil(t, tc)
}
