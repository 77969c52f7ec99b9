// Package server is the governor's HTTP surface: the Nomad proxy on /v1/,
// the /allot/v1 API, /healthz and /metrics.
package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	gapi "github.com/allot-sh/allot/governor/api"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/reconcile"
)

// Plans gives the latest plan (the reconciler); Cycle runs a fresh one.
type Plans interface {
	Latest() *engine.Plan
	Cycle(ctx context.Context) *engine.Plan
}

// Visible returns the namespaces the caller's token may read (nil: all).
type Visible func(r *http.Request) (map[string]bool, error)

// Server holds what the handlers read.
type Server struct {
	Plans   Plans
	Store   *cluster.Store
	Proxy   http.Handler
	Metrics *metrics.Metrics
	Visible Visible
	Log     hclog.Logger
	// Debug mounts Go's profiler on /debug/pprof/.
	Debug bool
	// Classes is the configured class table (GET /allot/v1/classes).
	Classes map[string]engine.Class
	// Journal holds recent decisions (GET /allot/v1/decisions).
	Journal *reconcile.Journal
}

// Handler returns the whole HTTP surface.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/", s.Proxy)
	mux.HandleFunc("/allot/v1/tenants", s.tenants)
	mux.HandleFunc("/allot/v1/queue", s.queue)
	mux.HandleFunc("/allot/v1/jobs/", s.why)
	mux.HandleFunc("/allot/v1/classes", s.classes)
	mux.HandleFunc("/allot/v1/decisions", s.decisions)
	mux.HandleFunc("/healthz", s.health)
	if s.Debug {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	if s.Metrics != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(s.Metrics.Registry, promhttp.HandlerOpts{}))
	}
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, gapi.Error{Error: msg})
}

// plan returns the latest plan and the caller's visible namespaces, or
// writes an error.
func (s *Server) plan(w http.ResponseWriter, r *http.Request) (*engine.Plan, map[string]bool, bool) {
	if r.Method != http.MethodGet {
		writeErr(w, http.StatusMethodNotAllowed, "only GET")
		return nil, nil, false
	}
	p := s.Plans.Latest()
	if p == nil {
		writeErr(w, http.StatusServiceUnavailable, "no decision cycle has run yet (still syncing with Nomad)")
		return nil, nil, false
	}
	vis, err := s.Visible(r)
	if err != nil {
		writeErr(w, http.StatusForbidden, "checking the namespaces your token may read: "+err.Error())
		return nil, nil, false
	}
	return p, vis, true
}

func canSee(vis map[string]bool, ns string) bool { return vis == nil || vis[ns] }

func (s *Server) tenants(w http.ResponseWriter, r *http.Request) {
	p, vis, ok := s.plan(w, r)
	if !ok {
		return
	}
	out := gapi.TenantList{Tenants: []gapi.Tenant{}}
	for _, t := range p.Tenants {
		if canSee(vis, t.Namespace) {
			out.Tenants = append(out.Tenants, tenantOf(t))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func tenantOf(t engine.TenantStatus) gapi.Tenant {
	out := gapi.Tenant{Namespace: t.Namespace, Cohort: t.Cohort, Weight: t.Weight, Classes: t.Classes,
		DefaultClass: t.DefaultClass, Quota: t.Quota, Limit: t.Limit, Lend: t.Lend, Usage: t.Usage,
		Queued: t.Queued, DominantShare: t.DominantShare}
	if t.Err != nil {
		out.Error = t.Err.Error()
	}
	return out
}

func (s *Server) queue(w http.ResponseWriter, r *http.Request) {
	p, vis, ok := s.plan(w, r)
	if !ok {
		return
	}
	out := gapi.Queue{Total: len(p.Queue), Jobs: []gapi.QueueEntry{}}
	for _, v := range p.Queue {
		if canSee(vis, v.Namespace) {
			out.Jobs = append(out.Jobs, gapi.QueueEntry{Namespace: v.Namespace, JobID: v.JobID, Class: v.Class,
				Position: v.Position, TenantPosition: v.TenantPosition, QueuedAt: v.QueuedAt, Reason: v.Reason})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// why serves /allot/v1/jobs/<ns>/<id>/why; the ID may hold any character.
func (s *Server) why(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/allot/v1/jobs/")
	rest, ok := strings.CutSuffix(rest, "/why")
	ns, id, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || ns == "" || id == "" {
		writeErr(w, http.StatusNotFound, "use /allot/v1/jobs/<namespace>/<job id>/why")
		return
	}
	p, vis, ok := s.plan(w, r)
	if !ok {
		return
	}
	v := p.Verdicts[ns+"/"+id]
	if _, known := s.Store.Job(ns, id); v == nil && known {
		// Submitted after the latest cycle: decide now rather than 404.
		v = s.Plans.Cycle(r.Context()).Verdicts[ns+"/"+id]
	}
	if v == nil || !canSee(vis, ns) {
		writeErr(w, http.StatusNotFound, "job "+ns+"/"+id+" is not governed by the governor (unknown job, or namespace not governed)")
		return
	}
	out := gapi.Why{Namespace: ns, JobID: id, State: v.State.String(), Class: v.Class, Position: v.Position,
		TenantPosition: v.TenantPosition, QueuedAt: v.QueuedAt, Reason: v.Reason, Checks: []gapi.Check{}}
	for _, c := range v.Checks {
		c := c
		out.Checks = append(out.Checks, gapi.Check{Name: c.Name, OK: c.OK, Detail: c.Text()})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	switch {
	case !s.Store.Synced():
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "syncing with Nomad"})
	case s.Plans.Latest() == nil:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "no decision cycle yet"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}
