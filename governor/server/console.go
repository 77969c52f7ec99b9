package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/console"
	"github.com/allot-sh/allot/governor/ledger"
)

// mountConsole serves the governance console at /ui/ (governor/console):
// it reads through this mux's /allot/v1 handlers in process and writes
// through the proxy, both with the signed-in user's token. A browser
// asking for / is sent to /ui/.
func (s *Server) mountConsole(mux *http.ServeMux) {
	log := s.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	c, err := console.New(console.Options{API: mux, Nomad: s.Proxy, Auth: s.Auth, JobPool: s.jobPool, Now: s.Now,
		Queue: s.consoleQueue, Request: s.request, ReasonCheck: s.reasonCheck, Audit: s.appendAudit, Log: log.Named("console")})
	if err != nil {
		// The templates are embedded: this is a build defect, not a
		// condition of the cluster. The API keeps serving.
		log.Error("console disabled", "error", err)
		return
	}
	mux.Handle(console.Prefix, c)
	mux.HandleFunc("/", rootToConsole)
}

// rootToConsole redirects browsers from / to /ui/; every other unknown
// path is 404 as before.
func rootToConsole(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		strings.Contains(r.Header.Get("Accept"), "text/html") {
		http.Redirect(w, r, console.Prefix, http.StatusFound)
		return
	}
	http.NotFound(w, r)
}

// consoleQueue is GET /allot/v1/queue's answer for caller c, refused as
// the API refuses it (authed, latest), without encoding it to JSON and
// without the requests and reasons' checks (the console asks s.request
// and s.reasonCheck for the rows it shows).
func (s *Server) consoleQueue(c *auth.Caller) (allotapi.Queue, error) {
	if !s.readsAny(c) {
		return allotapi.Queue{}, &console.APIError{Status: http.StatusForbidden, Msg: errNoNamespace}
	}
	p := s.Plans.Latest()
	if p == nil {
		return allotapi.Queue{}, &console.APIError{Status: http.StatusServiceUnavailable, Msg: errNoCycle}
	}
	return s.queueFor(p, c, false), nil
}

// errNoAuditLog: the ledger (and its audit chain) is not configured.
var errNoAuditLog = errors.New("the ledger is not configured: no audit log")

// appendAudit appends e to the ledger's audit chain (the console's
// operator actions that are not namespace writes, which the ledger's
// auditor records itself).
func (s *Server) appendAudit(ctx context.Context, e ledger.Entry) error {
	api, ok := s.Ledger.(*ledger.API)
	if !ok || api.DB == nil {
		return errNoAuditLog
	}
	return api.DB.Append(ctx, e)
}

// jobPool is the node pool of a job the store knows ("default" when the
// job names none, "" when unknown).
func (s *Server) jobPool(ns, id string) string {
	j, ok := s.Store.Job(ns, id)
	if !ok {
		return ""
	}
	return j.Pool()
}
