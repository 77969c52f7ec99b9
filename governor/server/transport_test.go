package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/quota"
)

func TestIsStream(t *testing.T) {
	cases := map[string]struct {
		method, target string
		upgrade        bool
		want           bool
	}{
		"event stream":       {method: "GET", target: "/v1/event/stream?topic=Job", want: true},
		"logs follow":        {method: "GET", target: "/v1/client/fs/logs/abc?follow=true", want: true},
		"exec websocket":     {method: "GET", target: "/v1/client/allocation/abc/exec", upgrade: true, want: true},
		"exec path":          {method: "GET", target: "/v1/client/allocation/abc/exec", want: true},
		"alloc restart":      {method: "PUT", target: "/v1/client/allocation/abc/restart", want: false},
		"agent monitor":      {method: "GET", target: "/v1/agent/monitor", want: true},
		"blocking query":     {method: "GET", target: "/v1/jobs?index=42&wait=5m", want: true},
		"index 0 is normal":  {method: "GET", target: "/v1/jobs?index=0", want: false},
		"register":           {method: "PUT", target: "/v1/jobs", want: false},
		"register ?index=":   {method: "PUT", target: "/v1/jobs?index=42", want: false},
		"allot api":          {method: "GET", target: "/allot/v1/queue", want: false},
		"operator snapshot":  {method: "GET", target: "/v1/operator/snapshot", want: true},
		"any upgrade header": {method: "GET", target: "/v1/whatever", upgrade: true, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			if tc.upgrade {
				r.Header.Set("Upgrade", "websocket")
			}
			must.Eq(t, tc.want, IsStream(r))
		})
	}
}

// slowProxy answers every /v1/ request in two parts with a pause between,
// longer than the server's write timeout.
func slowProxy(pause time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first\n")
		http.NewResponseController(w).Flush()
		<-time.After(pause) // the stream's own pace, not a wait for state
		_, _ = io.WriteString(w, "second\n")
	})
}

// TestAudit17_TimeoutsSpareStreams: audit #17. A normal request is cut
// at the write timeout; a stream on the same keep-alive connection right
// after it is not (the stale write deadline is cleared).
func TestAudit17_TimeoutsSpareStreams(t *testing.T) {
	_, srv := testServer(t, samplePlan(), true, func(s *Server) {
		s.Proxy = slowProxy(300 * time.Millisecond)
		s.Timeouts = Timeouts{Read: time.Second, Write: 100 * time.Millisecond}
	})
	client := srv.Client()
	body, err := getBody(client, srv.URL+"/v1/jobs")
	must.Error(t, err, must.Sprintf("a normal route outlived its write timeout: %q", body))
	// A quick normal request sets a write deadline on its connection; the
	// stream that reuses the connection must not inherit it.
	reused := 0
	for i := 0; i < 2; i++ {
		code, _ := getWith(t, client, srv.URL+"/healthz")
		must.Eq(t, http.StatusOK, code)
		trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
			if ci.Reused {
				reused++
			}
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, srv.URL+"/v1/event/stream", nil)
		resp, err := client.Do(req)
		must.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		must.NoError(t, err)
		must.Eq(t, "first\nsecond\n", string(b))
	}
	must.Positive(t, reused, must.Sprint("the stream reused the normal request's connection"))
}

func getWith(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	must.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return resp.StatusCode, string(b)
}

func getBody(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestAudit17_SlowBodyIsCut: a request body that trickles in is cut at
// the read timeout on a normal route.
func TestAudit17_SlowBodyIsCut(t *testing.T) {
	read := make(chan error, 1)
	_, srv := testServer(t, samplePlan(), true, func(s *Server) {
		s.Proxy = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			read <- err
		})
		s.Timeouts = Timeouts{Read: 100 * time.Millisecond, Write: time.Second}
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	must.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "PUT /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
	must.NoError(t, err)
	select {
	case err := <-read:
		must.Error(t, err)
		must.StrContains(t, err.Error(), "timeout")
	case <-time.After(5 * time.Second):
		t.Fatal("the body read was not cut")
	}
	_, _ = bufio.NewReader(conn).ReadString('\n')
}

// TestAudit13_ClientCertRequired: audit #13, with RequireClientCert a
// request without a verified client certificate is refused on every
// route, the proxy included, before the proxy sees it.
func TestAudit13_ClientCertRequired(t *testing.T) {
	proxied := false
	s, _ := testServer(t, samplePlan(), true, func(s *Server) {
		s.RequireClientCert = true
		s.Proxy = http.HandlerFunc(func(http.ResponseWriter, *http.Request) { proxied = true })
	})
	h := s.Handler()
	for _, path := range []string{"/v1/jobs", "/allot/v1/queue", "/metrics"} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("X-Nomad-Token", "root")
		r.TLS = &tls.ConnectionState{}
		h.ServeHTTP(rec, r)
		must.Eq(t, http.StatusForbidden, rec.Code)
		must.StrContains(t, rec.Body.String(), "client certificate is required")
	}
	must.False(t, proxied)
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil)
	r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{}}}}
	h.ServeHTTP(rec, r)
	must.True(t, proxied)
}

// TestAudit27_MetricsFiltered: audit #27. Per-tenant series only for
// namespaces the caller may read; cluster-wide series only for the scrape
// token, management and operator:read; nothing for anonymous callers.
func TestAudit27_MetricsFiltered(t *testing.T) {
	s, srv := testServer(t, samplePlan(), true, nil)
	s.Metrics.ObservePlan(&engine.Plan{Tenants: []engine.TenantStatus{
		{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "ml", Limit: quota.Vector{"gpu": 8}}}, Usage: quota.Vector{"gpu": 3}},
		{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "secret", Limit: quota.Vector{"gpu": 16}}}, Usage: quota.Vector{"gpu": 9}},
	}})
	s.Metrics.CycleSeconds.Observe(0.01)
	cases := map[string]struct {
		token      string
		code       int
		want, none []string
	}{
		"tenant": {token: "ml", code: 200, want: []string{`allot_usage{namespace="ml",resource="gpu"} 3`},
			none: []string{`namespace="secret"`, "allot_cycle_seconds", "go_goroutines"}},
		"management":    {token: "root", code: 200, want: []string{`namespace="secret"`, `namespace="ml"`, "allot_cycle_seconds"}},
		"operator read": {token: "ops", code: 200, want: []string{`allot_usage{namespace="secret",resource="gpu"} 9`, "go_goroutines"}},
		"anonymous":     {code: 403, want: []string{"Permission denied"}, none: []string{"allot_"}},
		"unknown token": {token: "nope", code: 403, want: []string{"ACL token not found"}, none: []string{"allot_"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, body := get(t, srv.URL+"/metrics", tc.token)
			must.Eq(t, tc.code, code)
			for _, w := range tc.want {
				must.StrContains(t, body, w)
			}
			for _, n := range tc.none {
				must.StrNotContains(t, body, n)
			}
		})
	}
}
