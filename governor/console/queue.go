package console

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/allot-sh/allot/governor/allotapi"
)

// PageSize is the number of queue rows on one page.
const PageSize = 50

// queueFilter narrows the queue view; empty fields match everything.
type queueFilter struct {
	Tenant, Pool, Class string
}

func (f queueFilter) match(e allotapi.QueueEntry, pool string) bool {
	return (f.Tenant == "" || f.Tenant == e.Namespace) && (f.Pool == "" || f.Pool == pool) &&
		(f.Class == "" || f.Class == e.Class)
}

// queueRow is one queued job on the page.
type queueRow struct {
	allotapi.QueueEntry
	Pool string
	Wait time.Duration
}

// queueData is the queue page.
type queueData struct {
	Rows []queueRow
	// Total is the whole queue, Visible what the caller may see, Matched
	// what the filter keeps.
	Total, Visible, Matched int
	Page, Pages             int
	Filter                  queueFilter
	Tenants, Pools, Classes []string
	PrevURL, NextURL, Self  string
}

// queue serves /ui/queue: the caller's part of the queue (as
// /allot/v1/queue gives it), filtered and paginated.
func (c *Console) queue(w http.ResponseWriter, q *Req) {
	qa, err := c.queueOf(q)
	if err != nil {
		c.apiFail(w, q, err)
		return
	}
	v := q.R.URL.Query()
	d := c.queuePage(qa, queueFilter{Tenant: v.Get("tenant"), Pool: v.Get("pool"), Class: v.Get("class")}, atoi(v.Get("page")))
	for i := range d.Rows {
		e := &d.Rows[i].QueueEntry
		e.ReasonCheck = c.reasonCheck(q, e.Namespace, e.JobID, e.Reason, e.ReasonCheck)
	}
	c.render(w, q, http.StatusOK, "queue", "queue.title", "", d)
}

// queuePage filters and cuts one page out of the queue.
func (c *Console) queuePage(qa allotapi.Queue, f queueFilter, page int) queueData {
	d := queueData{Total: qa.Total, Visible: len(qa.Jobs), Filter: f}
	tenants, pools, classes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	now := c.opts.Now()
	d.Page = page
	if d.Page < 1 {
		d.Page = 1
	}
	for _, e := range qa.Jobs {
		pool := c.opts.JobPool(e.Namespace, e.JobID)
		tenants[e.Namespace], pools[pool], classes[e.Class] = true, true, true
		if !f.match(e, pool) {
			continue
		}
		// Divide, never multiply the page: a huge ?page= would overflow.
		if d.Matched/PageSize == d.Page-1 {
			if e.Request == nil && c.opts.Request != nil {
				e.Request = c.opts.Request(e.Namespace, e.JobID)
			}
			d.Rows = append(d.Rows, queueRow{QueueEntry: e, Pool: pool, Wait: now.Sub(e.QueuedAt)})
		}
		d.Matched++
	}
	d.Tenants, d.Pools, d.Classes = keys(tenants), keys(pools), keys(classes)
	d.Pages = (d.Matched + PageSize - 1) / PageSize
	base := url.Values{}
	for k, v := range map[string]string{"tenant": f.Tenant, "pool": f.Pool, "class": f.Class} {
		if v != "" {
			base.Set(k, v)
		}
	}
	d.Self = pageURL(base, d.Page)
	if d.Page > 1 {
		d.PrevURL = pageURL(base, d.Page-1)
	}
	if d.Page < d.Pages {
		d.NextURL = pageURL(base, d.Page+1)
	}
	return d
}

func pageURL(base url.Values, page int) string {
	v := url.Values{}
	for k, vs := range base {
		v[k] = vs
	}
	v.Set("page", strconv.Itoa(page))
	return Prefix + "queue?" + v.Encode()
}

// reasonCheck is the structured failing check of a queued job's reason:
// the queue's own (the API's JSON carries it), else looked up for the
// rows a page shows (Options.ReasonCheck).
func (c *Console) reasonCheck(q *Req, ns, id, reason string, have *allotapi.Check) *allotapi.Check {
	if have != nil || c.opts.ReasonCheck == nil || q.Caller == nil {
		return have
	}
	return c.opts.ReasonCheck(q.Caller, ns, id, reason)
}

// keys returns the non-empty keys of m, sorted.
func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		if k != "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// atoi reads a positive page number; anything else is 1.
func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 1
	}
	return n
}
