package console

import (
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/allotapi"
)

// resourceRow is one resource of a tenant: what it is guaranteed, may
// reach and lend, against what it uses, borrows and lends.
type resourceRow struct {
	Resource                           string
	Quota, Lend, Usage, Borrowed, Lent int64
	Limit                              int64
	HasLimit, HasLend                  bool
	UsedOfQuotaPct, UsedOfLimitPct     float64
	QuotaX                             float64
}

// tenantJob is one job of the tenant: the governor's state when it is
// queued (held jobs show as queued, never "dead"), else Nomad's status.
type tenantJob struct {
	ID, Status string
	Queued     bool
	Position   int
	// Reason and ReasonCheck say why a queued job waits (the queue's
	// entry; the page renders them in its language).
	Reason      string
	ReasonCheck *allotapi.Check
}

// tenantData is the tenant page.
type tenantData struct {
	T         allotapi.Tenant
	Resources []resourceRow
	Jobs      []tenantJob
	// JobsNote says why Nomad's job list is missing ("" when shown).
	JobsNote string
	// JobsTotal is the number of jobs before the page's cut (maxTenantJobs).
	JobsTotal int
	// Flash is the result of a quota change (Error when it failed).
	Flash, Error string
	// Form keeps what the user typed after a refused change.
	Form quotaForm
}

// tenant serves /ui/tenants/<ns> (GET) and /ui/tenants/<ns>/quota (POST).
func (c *Console) tenant(w http.ResponseWriter, q *Req) {
	rest := strings.TrimPrefix(q.R.URL.EscapedPath(), Prefix+"tenants/")
	seg, action, _ := strings.Cut(rest, "/")
	if seg == "" && action == "" && q.R.Method != http.MethodPost {
		c.tenantList(w, q)
		return
	}
	ns, err := url.PathUnescape(seg)
	if err != nil || ns == "" {
		c.fail(w, q, http.StatusNotFound, q.L.T("err.notfound"))
		return
	}
	if !q.Caller.CanRead(ns) {
		c.forbidden(w, q)
		return
	}
	switch {
	case action == "" && q.R.Method != http.MethodPost:
		d := tenantData{}
		if saved := q.R.URL.Query().Get("saved"); saved != "" {
			d.Flash = q.L.F("tenant.saved", saved)
		}
		c.showTenant(w, q, ns, http.StatusOK, d)
	case action == "quota" && q.R.Method == http.MethodPost:
		c.setQuota(w, q, ns)
	default:
		c.fail(w, q, http.StatusNotFound, q.L.T("err.notfound"))
	}
}

// tenantList serves /ui/tenants/: every tenant the caller may read.
func (c *Console) tenantList(w http.ResponseWriter, q *Req) {
	var ts allotapi.TenantList
	if err := c.api(q, "/allot/v1/tenants", &ts); err != nil {
		c.apiFail(w, q, err)
		return
	}
	sort.Slice(ts.Tenants, func(i, j int) bool { return ts.Tenants[i].Namespace < ts.Tenants[j].Namespace })
	c.render(w, q, http.StatusOK, "tenants", "tenants.title", "", ts.Tenants)
}

// showTenant renders the tenant page with d's flash and form.
func (c *Console) showTenant(w http.ResponseWriter, q *Req, ns string, status int, d tenantData) {
	var ts allotapi.TenantList
	if err := c.api(q, "/allot/v1/tenants", &ts); err != nil {
		c.apiFail(w, q, err)
		return
	}
	found := false
	for _, t := range ts.Tenants {
		if t.Namespace == ns {
			d.T, found = t, true
		}
	}
	if !found {
		c.fail(w, q, http.StatusNotFound, q.L.F("tenant.notgoverned", ns))
		return
	}
	d.Resources = resourcesOf(d.T)
	qa, err := c.queueOf(q)
	if err != nil {
		c.apiFail(w, q, err)
		return
	}
	d.Jobs, d.JobsNote = c.tenantJobs(q, ns, qa)
	d.JobsTotal = len(d.Jobs)
	if len(d.Jobs) > maxTenantJobs {
		d.Jobs = d.Jobs[:maxTenantJobs]
	}
	for i := range d.Jobs {
		if j := &d.Jobs[i]; j.Queued {
			j.ReasonCheck = c.reasonCheck(q, ns, j.ID, j.Reason, j.ReasonCheck)
		}
	}
	c.render(w, q, status, "tenant", "tenant.title", "", d)
}

// resourcesOf lists every resource the tenant names or uses.
func resourcesOf(t allotapi.Tenant) []resourceRow {
	names := map[string]bool{}
	for _, m := range []map[string]int64{t.Quota, t.Limit, t.Lend, t.Usage, t.Borrowed, t.Lent} {
		for k := range m {
			names[k] = true
		}
	}
	out := make([]resourceRow, 0, len(names))
	for _, k := range keys(names) {
		r := resourceRow{Resource: k, Quota: t.Quota[k], Usage: t.Usage[k], Borrowed: t.Borrowed[k], Lent: t.Lent[k]}
		r.Limit, r.HasLimit = t.Limit[k]
		r.Lend, r.HasLend = t.Lend[k]
		scale := float64(r.Quota)
		if r.HasLimit && float64(r.Limit) > scale {
			scale = float64(r.Limit)
		}
		if float64(r.Usage) > scale {
			scale = float64(r.Usage)
		}
		r.UsedOfLimitPct = percent(float64(r.Usage), scale)
		r.QuotaX = percent(float64(r.Quota), scale)
		r.UsedOfQuotaPct = percent(float64(r.Usage), float64(r.Quota))
		out = append(out, r)
	}
	return out
}

// maxTenantJobs bounds the tenant page's job list (queued jobs first);
// the queue view, filtered to the tenant, pages through all of them.
const maxTenantJobs = 200

// tenantJobs merges Nomad's job list of ns (read with the caller's token
// through the proxy) with the governor's queue: a held job is "queued".
func (c *Console) tenantJobs(q *Req, ns string, qa allotapi.Queue) ([]tenantJob, string) {
	queued := map[string]allotapi.QueueEntry{}
	for _, e := range qa.Jobs {
		if e.Namespace == ns {
			queued[e.JobID] = e
		}
	}
	var stubs []*api.JobListStub
	note := ""
	if err := c.nomad(q, "/v1/jobs?namespace="+url.QueryEscape(ns), &stubs); err != nil {
		note = q.L.T("tenant.nojobs") + ": " + err.Error()
	}
	seen := map[string]bool{}
	var out []tenantJob
	for _, s := range stubs {
		j := tenantJob{ID: s.ID, Status: s.Status}
		if e, ok := queued[s.ID]; ok {
			j.Status, j.Queued, j.Position, j.Reason, j.ReasonCheck = "queued", true, e.Position, e.Reason, e.ReasonCheck
		}
		seen[s.ID] = true
		out = append(out, j)
	}
	for id, e := range queued {
		if !seen[id] {
			out = append(out, tenantJob{ID: id, Status: "queued", Queued: true, Position: e.Position,
				Reason: e.Reason, ReasonCheck: e.ReasonCheck})
		}
	}
	// Queued jobs first, in queue order; then the others by ID.
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Queued != b.Queued {
			return a.Queued
		}
		if a.Queued && a.Position != b.Position {
			return a.Position < b.Position
		}
		return a.ID < b.ID
	})
	return out, note
}
