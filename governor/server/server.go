// Package server is the governor's HTTP surface: the Nomad proxy on /v1/,
// the /allot/v1 API, /healthz and /metrics. Every /allot/v1 answer and
// every per-tenant /metrics series is filtered by what the caller's Nomad
// token may read (governor/auth); normal requests have read and write
// deadlines, streams are exempt. See README.md.
package server

import (
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/reconcile"
)

// Plans gives the latest plan (the reconciler). The server never runs a
// cycle: a GET decides nothing and writes nothing.
type Plans interface {
	Latest() *engine.Plan
}

// Authenticator resolves the caller of a request (governor/auth).
type Authenticator interface {
	Authenticate(r *http.Request) (*auth.Caller, error)
}

// Server holds what the handlers read.
type Server struct {
	Plans   Plans
	Store   *cluster.Store
	Proxy   http.Handler
	Metrics *metrics.Metrics
	// Auth authenticates every /allot/v1, /metrics and /debug request.
	Auth Authenticator
	// Engine is the engine's configuration, to explain a job the latest
	// cycle has not seen yet (GET .../why).
	Engine engine.Config
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	Log hclog.Logger
	// Debug mounts Go's profiler on /debug/pprof/ (management tokens only).
	Debug bool
	// Classes is the configured class table (GET /allot/v1/classes).
	Classes map[string]engine.Class
	// Journal holds recent decisions (GET /allot/v1/decisions).
	Journal *reconcile.Journal
	// RequireClientCert refuses every request without a verified client
	// certificate (Nomad requires them; the governor's own must not stand
	// in for a caller's).
	RequireClientCert bool
	// Timeouts bound normal requests; zero fields mean no bound.
	Timeouts Timeouts
	// Ledger answers /allot/v1/usage, cost, capacity and audit (nil: 404).
	Ledger LedgerReports
	// Idle answers /allot/v1/idle (nil: 404).
	Idle IdleReports
	// HA is the election's state under HA (ha.go); nil for a single
	// governor.
	HA HA
	// Actuator applies the requeues people ask for (POST
	// /allot/v1/jobs/<ns>/<id>/requeue, requeue.go); nil: refused.
	Actuator Applier

	members membersCache // HA's members for GET /allot/v1/status (ha.go)
}

// Handler returns the whole HTTP surface.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/", s.Proxy)
	mux.HandleFunc("/allot/v1/tenants", s.authed(s.tenants))
	mux.HandleFunc("/allot/v1/queue", s.authed(s.queue))
	mux.HandleFunc("/allot/v1/pools", s.authed(s.pools))
	mux.HandleFunc("/allot/v1/jobs/", s.jobs) // GET .../why, POST .../requeue
	mux.HandleFunc("/allot/v1/classes", s.authed(s.classes))
	mux.HandleFunc("/allot/v1/decisions", s.authed(s.decisions))
	mux.HandleFunc("/allot/v1/idle", s.authed(s.idle))
	for _, kind := range []string{ledger.ReportUsage, ledger.ReportCost, ledger.ReportCapacity, ledger.ReportAudit} {
		mux.HandleFunc("/allot/v1/"+kind, s.authed(s.ledgerRoute(kind)))
	}
	mux.HandleFunc("/allot/v1/status", s.authed(s.status))
	mux.HandleFunc("/healthz", s.health)
	mux.HandleFunc("/readyz", s.ready)
	if s.Debug {
		mux.HandleFunc("/debug/pprof/", s.management(profileSeconds(pprof.Index)))
		mux.HandleFunc("/debug/pprof/profile", s.management(profileSeconds(pprof.Profile)))
		mux.HandleFunc("/debug/pprof/trace", s.management(profileSeconds(pprof.Trace)))
	}
	if s.Metrics != nil {
		mux.HandleFunc("/metrics", s.metrics)
	}
	s.mountConsole(mux)
	return s.transport(mux)
}

func (s *Server) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func writeErr(w http.ResponseWriter, status int, msg string) {
	allotapi.WriteJSON(w, status, allotapi.Error{Error: msg})
}

// denyJSON answers an authentication error on the JSON API.
func denyJSON(w http.ResponseWriter, err error) {
	writeErr(w, auth.Status(err), auth.Message(err))
}
