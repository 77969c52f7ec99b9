package console

import (
	"errors"
	"net/http"
)

// View is one page of the console.
type View struct {
	// Path under /ui/: "" is the overview; a path ending in "/" also
	// serves everything below it (tenants/<ns>).
	Path string
	// Nav is the catalogue key of its navigation label; "" keeps the view
	// out of the navigation.
	Nav string
	// Template is the templates/<name>.html the view renders (checked by
	// New), "" when it renders several.
	Template string
	// Serve answers a signed-in request (a POST has passed the CSRF and
	// origin checks already).
	Serve func(w http.ResponseWriter, q *Req)
}

// viewTable is the console's views, in navigation order. To add a view:
// write its handler and templates/<name>.html, list its labels in
// catalogueParts (messages.go), and add one line here. See README.md.
func (c *Console) viewTable() []View {
	return []View{
		{Path: "", Nav: "nav.overview", Template: "overview", Serve: c.overview},
		{Path: "queue", Nav: "nav.queue", Template: "queue", Serve: c.queue},
		{Path: "tenants/", Nav: "nav.tenants", Serve: c.tenant},
		{Path: "jobs/", Template: "job", Serve: c.job},
		{Path: "release/", Serve: c.release},
		{Path: "requeue/", Serve: c.requeue},
		{Path: "usage", Nav: "nav.usage", Template: "usage", Serve: c.usage},
		{Path: "usage.csv", Serve: c.usageCSV},
		{Path: "idle", Nav: "nav.idle", Template: "idle", Serve: c.idleView},
		{Path: "idle/exempt", Template: "idle", Serve: c.idleExempt},
		{Path: "capacity", Nav: "nav.capacity", Template: "capacity", Serve: c.capacity},
		{Path: "audit", Nav: "nav.audit", Template: "audit", Serve: c.auditView},
	}
}

// apiFail renders an API error as the console's error page: 403 stays
// 403 (another tenant's page), 404 stays 404, the rest as they came.
func (c *Console) apiFail(w http.ResponseWriter, q *Req, err error) {
	var ae *APIError
	if errors.As(err, &ae) {
		text := ae.Msg
		if ae.Status == http.StatusForbidden {
			text = q.L.T("err.forbidden") + " (" + ae.Msg + ")"
		}
		c.fail(w, q, ae.Status, text)
		return
	}
	c.opts.Log.Error("console: reading the API", "error", err)
	c.fail(w, q, http.StatusInternalServerError, q.L.T("err.internal"))
}

// forbidden renders the 403 page for a namespace the caller may not read.
func (c *Console) forbidden(w http.ResponseWriter, q *Req) {
	c.fail(w, q, http.StatusForbidden, q.L.T("err.forbidden"))
}
