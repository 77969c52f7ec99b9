package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/governor/config"
)

// newHTTPServer builds the governor's http.Server: header and idle
// timeouts on the server; read and write deadlines are set per request by
// the server package, so streams can be exempt (audit #17).
// Its own errors (refused TLS handshakes, for one) go to log.
func newHTTPServer(h http.Handler, c config.HTTP, tc *tls.Config, log hclog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: c.ReadHeaderTimeout, IdleTimeout: c.IdleTimeout, TLSConfig: tc,
		ErrorLog: log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
}

// listenerTLS builds the listener's TLS configuration (nil without TLS):
// TLS 1.2 or newer, and with a client CA, every caller must present a
// certificate that CA signed (audit #13).
func listenerTLS(c config.TLS) (*tls.Config, error) {
	if !c.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the listener's certificate: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if c.ClientCAFile == "" {
		return tc, nil
	}
	pem, err := os.ReadFile(c.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("reading the client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("client CA " + c.ClientCAFile + ": no PEM certificate in it")
	}
	tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	return tc, nil
}

// serve serves hs on ln, over TLS when hs has a TLS configuration.
func serve(hs *http.Server, ln net.Listener) error {
	if hs.TLSConfig != nil {
		return hs.ServeTLS(ln, "", "")
	}
	return hs.Serve(ln)
}
