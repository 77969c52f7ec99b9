package server

import (
	"net/http"
	"strings"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/engine"
)

// why serves /allot/v1/jobs/<ns>/<id>/why; the ID may hold any character.
// Visibility is checked first, before anything about the job is looked
// up, so a hidden namespace answers exactly like a forbidden one (403,
// as Nomad answers reading a job there). It never runs a cycle.
func (s *Server) why(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	rest := strings.TrimPrefix(r.URL.Path, "/allot/v1/jobs/")
	rest, ok := strings.CutSuffix(rest, "/why")
	ns, id, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || ns == "" || id == "" {
		writeErr(w, http.StatusNotFound, "use /allot/v1/jobs/<namespace>/<job id>/why")
		return
	}
	if !c.CanRead(ns) {
		writeErr(w, http.StatusForbidden, auth.ErrPermissionDenied.Error())
		return
	}
	p, ok := s.latest(w)
	if !ok {
		return
	}
	v := p.Verdicts[ns+"/"+id]
	if v == nil {
		v = s.evaluate(p, ns, id)
	}
	if v == nil {
		writeErr(w, http.StatusNotFound, "job "+ns+"/"+id+" is not governed by the governor (unknown job, or namespace not governed)")
		return
	}
	rd := c.Redactor(s.Store.Namespaces())
	out := allotapi.Why{Namespace: ns, JobID: id, State: v.State.String(), Class: v.Class, Position: v.Position,
		TenantPosition: v.TenantPosition, QueuedAt: v.QueuedAt, Reason: rd.Text(v.Reason), ReasonCheck: newReasonChecks(rd).of(v),
		Checks: []allotapi.Check{}}
	for i := range v.Checks {
		out.Checks = append(out.Checks, apiCheck(rd, &v.Checks[i]))
	}
	allotapi.WriteJSON(w, http.StatusOK, out)
}

// evaluate explains a job the latest cycle has not decided about (it was
// submitted since): that job alone is decided against a fresh snapshot
// without it, like a proxy admission preview, with no lock held and
// nothing applied. Its queue position comes from the latest plan. Nil when
// the job is unknown or its namespace is not governed.
func (s *Server) evaluate(p *engine.Plan, ns, id string) *engine.Verdict {
	stored, ok := s.Store.Job(ns, id)
	if !ok || stored.State == engine.Stopped || !governedIn(p, ns) {
		return nil
	}
	j := *stored // the engine reads it; the store's copy stays untouched
	snap := s.Store.Snapshot(s.now())
	others := snap.Jobs[:0:0]
	for _, o := range snap.Jobs {
		if o.Key() != j.Key() {
			others = append(others, o)
		}
	}
	snap.Jobs = others
	state := j.State
	if j.QueuedAt.IsZero() {
		j.QueuedAt = snap.Now
	}
	j.State = engine.Queued
	v := engine.Prepare(s.Engine, snap).Decide(&j, false)
	if state != engine.Queued {
		// Running under Nomad: say so, as a cycle would.
		v.State, v.Reason = state, state.String()+": running under Nomad"
		return &v
	}
	if v.State == engine.Admitted {
		v.State, v.Reason = engine.Queued, "fits now; the next cycle admits it ("+v.Reason+")"
	}
	v.Position, v.TenantPosition = engine.QueuePosition(p, s.Engine, &j, v.Class)
	return &v
}

// governedIn reports whether the plan has a tenant for ns.
func governedIn(p *engine.Plan, ns string) bool {
	for _, t := range p.Tenants {
		if t.Namespace == ns {
			return true
		}
	}
	return false
}
