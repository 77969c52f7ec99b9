// Package proxy serves Nomad's API (/v1/*) on the governor's address. Job
// registrations, updates, plans and scale-ups in governed namespaces go
// through admission; everything else, websockets and the event stream
// included, passes through untouched. The caller's X-Nomad-Token is
// forwarded and Nomad's ACL decides; the governor's own token is never
// used for a caller's request.
package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/reconcile"
)

// maxBody bounds the request bodies the proxy reads to admit a job.
const maxBody = 64 << 20

// maxIdleConns is how many idle connections to Nomad the proxy keeps.
const maxIdleConns = 256

// Proxy is the /v1/* handler.
type Proxy struct {
	target *url.URL
	rp     *httputil.ReverseProxy
	client *http.Client
	rec    *reconcile.Reconciler
	store  *cluster.Store
	// Governed tells whether a namespace is governed now.
	governed func(ns string) bool
	log      hclog.Logger
	metrics  *metrics.Metrics
}

// Options configure a Proxy.
type Options struct {
	// Target is Nomad's HTTP address.
	Target *url.URL
	// Transport reaches Nomad (TLS settings); nil means the default.
	Transport  http.RoundTripper
	Reconciler *reconcile.Reconciler
	Store      *cluster.Store
	Governed   func(ns string) bool
	Log        hclog.Logger
	Metrics    *metrics.Metrics
}

// New returns a proxy to opts.Target.
func New(opts Options) *Proxy {
	tr := opts.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	if t, ok := tr.(*http.Transport); ok {
		// Every caller's request becomes one to Nomad: keep as many idle
		// connections as callers may have in flight, or each burst above
		// the pooled client's default (GOMAXPROCS+1) dials Nomad anew.
		t = t.Clone()
		t.MaxIdleConnsPerHost, t.MaxIdleConns = maxIdleConns, maxIdleConns
		tr = t
	}
	rp := httputil.NewSingleHostReverseProxy(opts.Target)
	rp.Transport = tr
	rp.FlushInterval = -1 // stream blocking queries, logs and the event stream at once
	rp.ErrorLog = opts.Log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	return &Proxy{target: opts.Target, rp: rp, client: &http.Client{Transport: tr}, rec: opts.Reconciler,
		store: opts.Store, governed: opts.Governed, log: opts.Log, metrics: opts.Metrics}
}

// ServeHTTP routes one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, id := Classify(r.Method, r.URL.Path)
	if kind != Passthrough && !p.store.Ready() {
		// Until the store knows the namespaces, a governed job could slip
		// through unadmitted: refuse instead, nothing is lost.
		http.Error(w, "allot-governor: starting up (syncing with Nomad), retry in a moment", http.StatusServiceUnavailable)
		return
	}
	var err error
	switch kind {
	case Register:
		err = p.register(w, r)
	case Plan:
		err = p.plan(w, r)
	case Scale:
		err = p.scale(w, r, id)
	case Dispatch:
		err = p.dispatch(w, r, id)
	case Revert:
		err = p.revert(w, r, id)
	default:
		p.rp.ServeHTTP(w, r)
		return
	}
	if err != nil {
		p.log.Error("proxying job request", "kind", kind, "path", r.URL.Path, "error", err)
		http.Error(w, "allot-governor: "+err.Error(), http.StatusBadGateway)
	}
}

// readBody reads and replaces r's body so it can be forwarded unchanged.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading request body: %w", err)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("request body over %d bytes", maxBody)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// forward sends a request with body to Nomad with the caller's headers
// (token included) and returns the response, body read.
func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, []byte, error) {
	u := *p.target
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("building request to Nomad: %w", err)
	}
	out.Header = r.Header.Clone()
	// Nomad would gzip the response and the governor unzip it again, on
	// every submission: ask for it plain.
	out.Header.Set("Accept-Encoding", "identity")
	out.Header.Del("Content-Length")
	resp, err := p.client.Do(out)
	if err != nil {
		return nil, nil, fmt.Errorf("forwarding to Nomad: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("reading Nomad's response: %w", err)
	}
	return resp, data, nil
}

// reply copies a Nomad response (with a possibly rewritten body) to w.
func reply(w http.ResponseWriter, resp *http.Response, body []byte) {
	for k, vs := range resp.Header {
		if k == "Content-Length" || k == "Content-Encoding" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}
