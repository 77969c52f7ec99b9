package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/allot-sh/allot/governor/ledger"
)

// KindJobRelease is the audit kind of a job stopped from the console.
const KindJobRelease = "job-release"

// errNoAudit says a release happened but the governor keeps no audit log.
var errNoAudit = errors.New("the governor has no audit log (ledger not configured)")

// release handles POST /ui/release/<ns>/<id>: the job is stopped with the
// caller's token through the governor's proxy (DELETE /v1/job/<id>, what
// `nomad job stop` sends), so Nomad decides whether the token may; a held
// job leaves the queue, a running one frees its devices, and the governor
// never restarts either (a user's stop). The release is then written to
// the audit log with the token as its actor.
func (c *Console) release(w http.ResponseWriter, q *Req) {
	ns, id, ok := c.jobAction(w, q, "release")
	if !ok {
		return
	}
	if c.opts.Nomad == nil {
		c.fail(w, q, http.StatusNotFound, "no Nomad proxy to write through")
		return
	}
	path := "/v1/job/" + url.PathEscape(id) + "?namespace=" + url.QueryEscape(ns)
	rec, err := c.call(q.R.Context(), q, c.opts.Nomad, http.MethodDelete, path, nil)
	if err != nil {
		c.fail(w, q, http.StatusInternalServerError, q.L.T("err.internal"))
		return
	}
	if rec.status/100 != 2 {
		c.fail(w, q, rec.status, q.L.F("job.releaserefused", rec.status, strings.TrimSpace(rec.body.String())))
		return
	}
	c.opts.Log.Info("console job release", "namespace", ns, "job", id, "accessor", q.Caller.AccessorID)
	done := "audited"
	if err := c.audit(q, ns, id); err != nil {
		c.opts.Log.Error("console job release not audited", "namespace", ns, "job", id, "error", err)
		done = "unaudited"
	}
	http.Redirect(w, q.R, jobURL(ns, id)+"?released="+done, http.StatusSeeOther)
}

// audit appends the release to the ledger's audit chain.
func (c *Console) audit(q *Req, ns, id string) error {
	if c.opts.Audit == nil {
		return errNoAudit
	}
	actor, name := ledger.ActorOf(q.Caller)
	e := ledger.Entry{Time: c.opts.Now(), Kind: KindJobRelease, Actor: actor, ActorName: name, Namespace: ns,
		Subject: id, Detail: "stopped from the console (DELETE /v1/job through the governor, the caller's token)"}
	if err := c.opts.Audit(q.R.Context(), e); err != nil {
		return fmt.Errorf("appending the audit entry: %w", err)
	}
	return nil
}

// jobAction reads ns and id from a job action's path,
// Prefix+action+"/<ns>/<id>" (release, requeue), and checks that it is a
// POST and that the caller may read ns. When it returns false it has
// written the answer (405, 404 or 403).
func (c *Console) jobAction(w http.ResponseWriter, q *Req, action string) (ns, id string, ok bool) {
	if q.R.Method != http.MethodPost {
		c.fail(w, q, http.StatusMethodNotAllowed, q.L.T("err.notfound"))
		return "", "", false
	}
	ns, id, ok = splitJob(strings.TrimPrefix(q.R.URL.EscapedPath(), Prefix+action+"/"))
	if !ok {
		c.fail(w, q, http.StatusNotFound, q.L.T("err.notfound"))
		return "", "", false
	}
	if !q.Caller.CanRead(ns) {
		c.forbidden(w, q)
		return "", "", false
	}
	return ns, id, true
}

// splitJob splits an escaped "<ns>/<id>"; the ID may hold any character.
func splitJob(rest string) (ns, id string, ok bool) {
	a, b, found := strings.Cut(rest, "/")
	if !found {
		return "", "", false
	}
	ns, err1 := url.PathUnescape(a)
	id, err2 := url.PathUnescape(b)
	return ns, id, err1 == nil && err2 == nil && ns != "" && id != ""
}
