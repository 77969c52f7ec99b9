package server

import (
	"net/http"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/engine"
)

// errNoNamespace refuses a caller that may read no namespace at all
// (anonymous callers of a cluster without an anonymous policy): it gets
// nothing, not even empty lists.
const errNoNamespace = "Permission denied: your token may read no namespace"

// errNoCycle answers reads before the first decision cycle.
const errNoCycle = "no decision cycle has run yet (still syncing with Nomad)"

// authed authenticates the caller before h. A caller that may read no
// namespace is refused with 403, the way Nomad refuses it.
func (s *Server) authed(h func(http.ResponseWriter, *http.Request, *auth.Caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writeErr(w, http.StatusMethodNotAllowed, "only GET")
			return
		}
		c, err := s.Auth.Authenticate(r)
		if err != nil {
			denyJSON(w, err)
			return
		}
		if !s.readsAny(c) {
			writeErr(w, http.StatusForbidden, errNoNamespace)
			return
		}
		h(w, r, c)
	}
}

// management lets only management tokens (or a cluster without ACLs) in.
func (s *Server) management(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.Auth.Authenticate(r)
		if err != nil {
			auth.Deny(w, err)
			return
		}
		if !c.Management() {
			auth.Deny(w, auth.ErrPermissionDenied)
			return
		}
		h(w, r)
	}
}

// readsAny reports whether c may read some namespace Nomad has.
func (s *Server) readsAny(c *auth.Caller) bool {
	if c.Management() {
		return true
	}
	for _, ns := range s.Store.Namespaces() {
		if c.CanRead(ns) {
			return true
		}
	}
	return false
}

// latest returns the latest plan or answers 503.
func (s *Server) latest(w http.ResponseWriter) (*engine.Plan, bool) {
	p := s.Plans.Latest()
	if p == nil {
		writeErr(w, http.StatusServiceUnavailable, errNoCycle)
		return nil, false
	}
	return p, true
}

func (s *Server) tenants(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	p, ok := s.latest(w)
	if !ok {
		return
	}
	out := allotapi.TenantList{Tenants: []allotapi.Tenant{}}
	lending := engine.LendingOf(p.Tenants)
	for _, t := range p.Tenants {
		if c.CanRead(t.Namespace) {
			out.Tenants = append(out.Tenants, tenantOf(t, lending))
		}
	}
	allotapi.WriteJSON(w, http.StatusOK, out)
}

func tenantOf(t engine.TenantStatus, l engine.Lending) allotapi.Tenant {
	out := allotapi.Tenant{Namespace: t.Namespace, Cohort: t.Cohort, Weight: t.Weight, Classes: t.Classes,
		DefaultClass: t.DefaultClass, Quota: t.Quota, Limit: t.Limit, Lend: t.Lend, Usage: t.Usage,
		Borrowed: l.Borrowed[t.Namespace], Lent: l.Lent[t.Namespace], Queued: t.Queued, DominantShare: t.DominantShare}
	if t.Err != nil {
		out.Error = t.Err.Error()
	}
	return out
}

// queue lists the caller's queued jobs with their places in the whole
// queue; reasons that name another tenant's job or namespace are redacted.
func (s *Server) queue(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	p, ok := s.latest(w)
	if !ok {
		return
	}
	allotapi.WriteJSON(w, http.StatusOK, s.queueFor(p, c, true))
}

// queueFor is plan p's queue as caller c may see it: the API's answer,
// also what the console shows (governor/console, without a JSON round
// trip). Without withRequests the entries' Request is left out (the
// console looks up only the requests of the rows it shows); the same
// holds for the reasons' structured checks (ReasonCheck).
func (s *Server) queueFor(p *engine.Plan, c *auth.Caller, withRequests bool) allotapi.Queue {
	rd := c.Redactor(s.Store.Namespaces())
	// Sized first: grown by append, the 10,000-entry slice cost several
	// times its size in copies.
	n := 0
	for i := range p.Queue {
		if c.CanRead(p.Queue[i].Namespace) {
			n++
		}
	}
	out := allotapi.Queue{Total: len(p.Queue), Jobs: make([]allotapi.QueueEntry, 0, n)}
	rcs := newReasonChecks(rd)
	for i := range p.Queue {
		if v := &p.Queue[i]; c.CanRead(v.Namespace) {
			e := allotapi.QueueEntry{Namespace: v.Namespace, JobID: v.JobID, Class: v.Class,
				Position: v.Position, TenantPosition: v.TenantPosition, QueuedAt: v.QueuedAt, Reason: rd.Text(v.Reason)}
			if withRequests {
				e.Request = s.request(v.Namespace, v.JobID)
				e.ReasonCheck = rcs.of(v)
			}
			out.Jobs = append(out.Jobs, e)
		}
	}
	return out
}

// request is what the stored job asks for (engine.Request), nil when the
// store no longer has it.
func (s *Server) request(ns, id string) map[string]int64 {
	j, ok := s.Store.Job(ns, id)
	if !ok {
		return nil
	}
	return engine.Request(j)
}
