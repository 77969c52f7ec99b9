// Package proxy serves Nomad's API (/v1/*) on the governor's address.
// Every route that can create or grow allocations in a governed namespace
// (register, scale, dispatch, revert, periodic force) goes through
// admission; plans get a preview; everything else, websockets and the
// event stream included, passes through untouched. Bodies of admission
// routes are decoded exactly as Nomad 1.6.1 decodes them, namespace and
// region resolved as Nomad resolves them, and the caller's token is
// checked for the capability Nomad will demand before any admission work.
// The caller's X-Nomad-Token is forwarded; the governor's own token is
// never used for a caller's request. See README.md.
package proxy

import (
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/hahttp"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/quota"
	"github.com/allot-sh/allot/governor/reconcile"
)

// Defaults of Options.
const (
	// DefaultMaxBody bounds the body of an admission request. Nomad jobs
	// are kilobytes to a few megabytes.
	DefaultMaxBody = 4 << 20
	// DefaultMaxInFlight bounds the admission requests served at once.
	DefaultMaxInFlight = 64
)

// System job policies (Options.SystemJobs).
const (
	// SystemJobsRefuse refuses system and sysbatch jobs in governed
	// namespaces with a reason (the default).
	SystemJobsRefuse = "refuse"
	// SystemJobsGovern admits them like other jobs (the engine counts them
	// per node).
	SystemJobsGovern = "govern"
)

// maxIdleConns is how many idle connections to Nomad the proxy keeps.
const maxIdleConns = 256

// Proxy is the /v1/* handler.
type Proxy struct {
	target   *url.URL
	rp       *httputil.ReverseProxy
	client   *http.Client
	rec      *reconcile.Reconciler
	store    *cluster.Store
	governed func(ns string) bool
	tenant   func(ns string) (quota.Tenant, bool)
	auth     Authorizer
	sealer   *jobmeta.Sealer
	log      hclog.Logger
	metrics  *metrics.Metrics
	maxBody  int64
	region   string
	system   string
	slots    chan struct{}
	// lead and fwd: HA (ha.go); lead nil without HA.
	lead Leadership
	fwd  leaderForwarder
}

// Options configure a Proxy.
type Options struct {
	// Target is Nomad's HTTP address.
	Target *url.URL
	// Transport reaches Nomad (TLS settings); nil means the default.
	Transport  http.RoundTripper
	Reconciler *reconcile.Reconciler
	Store      *cluster.Store
	// Governed tells whether a namespace is governed now.
	Governed func(ns string) bool
	// Book has the tenants (classes a tenant may use, default class); nil
	// means every governed tenant may use every unrestricted class.
	Book *quota.Book
	// Auth checks the caller's capability before any admission work; nil
	// only where Nomad's ACLs are off (every caller may do everything).
	Auth Authorizer
	// Sealer seals the governor's record of the jobs the proxy admits or
	// holds; it must be the one the rest of the governor verifies with.
	// nil makes a key for this process only (its seals verify nowhere
	// else, so admitted jobs count as written straight to Nomad).
	Sealer *jobmeta.Sealer
	// Region is the Nomad region the governor governs ("global", Nomad's
	// default, when empty). Writes Nomad would apply to another region are
	// refused.
	Region string
	// MaxBody bounds an admission request's body (DefaultMaxBody when 0);
	// larger ones get 413.
	MaxBody int64
	// MaxInFlight bounds the admission requests served at once
	// (DefaultMaxInFlight when 0); more get 429 with Retry-After.
	MaxInFlight int
	// SystemJobs is SystemJobsRefuse (default) or SystemJobsGovern.
	SystemJobs string
	Log        hclog.Logger
	Metrics    *metrics.Metrics
	// Leadership, under HA, says whether this governor admits or forwards
	// admission routes to the leader (ha.go); nil: it admits.
	Leadership Leadership
	// LeaderTransport reaches the leader's advertise URL (the default
	// transport when nil).
	LeaderTransport http.RoundTripper
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
	if opts.Log == nil {
		opts.Log = hclog.NewNullLogger()
	}
	rp := httputil.NewSingleHostReverseProxy(opts.Target)
	rp.Transport = tr
	rp.FlushInterval = -1 // stream blocking queries, logs and the event stream at once
	rp.ErrorLog = opts.Log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	rp.ErrorHandler = badGateway(opts.Log)
	p := &Proxy{target: opts.Target, rp: rp, client: &http.Client{Transport: tr}, rec: opts.Reconciler,
		store: opts.Store, governed: opts.Governed, auth: opts.Auth, log: opts.Log, metrics: opts.Metrics,
		maxBody: opts.MaxBody, region: opts.Region, system: opts.SystemJobs}
	p.lead, p.fwd = opts.Leadership, leaderForwarder{tr: opts.LeaderTransport, log: opts.Log.Named("ha")}
	if p.fwd.tr == nil {
		p.fwd.tr = http.DefaultTransport
	}
	p.tenant = tenantsOf(opts.Book)
	p.sealer = opts.Sealer
	if p.sealer == nil {
		p.sealer = ephemeralSealer(opts.Log)
	}
	if p.maxBody <= 0 {
		p.maxBody = DefaultMaxBody
	}
	if p.region == "" {
		p.region = api.GlobalRegion
	}
	if p.system == "" {
		p.system = SystemJobsRefuse
	}
	n := opts.MaxInFlight
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	p.slots = make(chan struct{}, n)
	return p
}

// ephemeralSealer is a sealer with a random key for this process.
func ephemeralSealer(log hclog.Logger) *jobmeta.Sealer {
	key := make([]byte, jobmeta.KeySize)
	if _, err := rand.Read(key); err != nil {
		log.Error("no admission key: jobs cannot be admitted", "error", err)
		return nil
	}
	s, _ := jobmeta.NewSealer(key)
	log.Warn("no admission key given: the proxy seals with a key of its own, which the rest of the governor cannot verify")
	return s
}

func tenantsOf(b *quota.Book) func(string) (quota.Tenant, bool) {
	return func(ns string) (quota.Tenant, bool) {
		if b == nil {
			return quota.Tenant{}, false
		}
		e, ok := b.Get(ns)
		return e.Tenant, ok
	}
}

// ServeHTTP routes one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Header.Del(hahttp.EpochHeader) // only a leader's own writes carry a term
	kind, id := Classify(r.Method, r.URL.Path)
	if kind == Passthrough {
		// A namespace write goes to Nomad from the leader only (HA): its
		// auditor is the one ledger writer (docs/ha.md).
		if hahttp.NamespaceWrite(r.Method, r.URL.Path) {
			if r = p.routeHA(w, r); r == nil {
				return
			}
		}
		p.rp.ServeHTTP(w, r)
		return
	}
	// Under HA only the leader admits: a standby forwards (or answers 503
	// while there is no leader), so reservations stay in one place.
	if r = p.routeHA(w, r); r == nil {
		return
	}
	if !p.store.Ready() {
		// Until the store knows the namespaces, a governed job could slip
		// through unadmitted: refuse instead, nothing is lost.
		w.Header().Set("Retry-After", "1")
		http.Error(w, "allot-governor: starting up (syncing with Nomad), retry in a moment", http.StatusServiceUnavailable)
		return
	}
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "allot-governor: too many job submissions in flight, retry in a moment", http.StatusTooManyRequests)
		return
	}
	p.answer(w, kind, r, p.route(w, r, kind, id))
}

// route runs the handler of an admission route.
func (p *Proxy) route(w http.ResponseWriter, r *http.Request, kind Kind, id string) error {
	switch kind {
	case Register:
		return p.register(w, r, id)
	case Plan:
		return p.plan(w, r, id)
	case Scale:
		return p.scale(w, r, id)
	case Dispatch:
		return p.dispatch(w, r, id)
	case Revert:
		return p.revert(w, r, id)
	case PeriodicForce:
		return p.periodicForce(w, r, id)
	}
	p.rp.ServeHTTP(w, r)
	return nil
}

// answer turns a handler's error into the caller's answer: a refusal
// with its status and reason, an authentication refusal as Nomad words
// it, anything else as 502 without Nomad's address (it is logged).
func (p *Proxy) answer(w http.ResponseWriter, kind Kind, r *http.Request, err error) {
	var ref *refusal
	switch {
	case err == nil:
	case errors.As(err, &ref):
		if ref.status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", retryAfterNoLeader)
		}
		http.Error(w, "allot-governor: "+ref.msg, ref.status)
	case isAuthError(err):
		denyAuth(w, err)
	default:
		p.log.Error("proxying job request", "kind", kind, "path", r.URL.Path, "error", err)
		http.Error(w, "allot-governor: "+errNomad.Error(), http.StatusBadGateway)
	}
}

// errNomad is what a caller is told when Nomad could not be reached or
// answered what the governor could not read; the details, Nomad's
// address among them, go to the governor's log only.
var errNomad = errors.New("Nomad could not be reached or its answer could not be read (details in the governor's log)")

// badGateway answers a failed pass-through request without the error
// text, which names Nomad's internal address.
func badGateway(log hclog.Logger) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		log.Error("proxying request", "path", r.URL.Path, "error", err)
		http.Error(w, "allot-governor: "+errNomad.Error(), http.StatusBadGateway)
	}
}

// refusal is an answer the proxy gives itself (4xx) with its reason.
type refusal struct {
	status int
	msg    string
}

func (r *refusal) Error() string { return r.msg }

// refuse returns a refusal with status and a formatted reason.
func refuse(status int, msg string) error { return &refusal{status: status, msg: msg} }

// badRequest is a 400 refusal.
func badRequest(msg string) error { return refuse(http.StatusBadRequest, msg) }
