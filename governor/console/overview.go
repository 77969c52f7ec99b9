package console

import (
	"errors"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/ledger"
)

// overviewWindow is the window of the overview's pool figures.
const overviewWindow = time.Hour

// topTenants is how many tenants the overview lists.
const topTenants = 5

// poolRow is one pool and device model, in average devices over the
// window; the *Pct fields draw its bar.
type poolRow struct {
	Pool, Model                              string
	Capacity, Allocated, Idle, Down, Waiting float64
	AllocatedPct, IdlePct, DownPct           float64
	// IdleX and DownX are where the idle and down parts of the bar start.
	IdleX, DownX float64
	Shortage     float64
}

// overviewData is the overview page.
type overviewData struct {
	Pools []poolRow
	// PoolsNote explains missing pool figures (ledger off), "" otherwise.
	PoolsNote     string
	QueueTotal    int
	QueueVisible  int
	Tenants       []allotapi.Tenant
	TenantsShown  int
	WindowMinutes int
}

// overview serves /ui/: pools, the queue's length, the top tenants.
func (c *Console) overview(w http.ResponseWriter, q *Req) {
	var ts allotapi.TenantList
	if err := c.api(q, "/allot/v1/tenants", &ts); err != nil {
		c.apiFail(w, q, err)
		return
	}
	qa, err := c.queueOf(q)
	if err != nil {
		c.apiFail(w, q, err)
		return
	}
	d := overviewData{QueueTotal: qa.Total, QueueVisible: len(qa.Jobs), WindowMinutes: int(overviewWindow.Minutes()),
		TenantsShown: len(ts.Tenants)}
	sort.SliceStable(ts.Tenants, func(i, j int) bool { return ts.Tenants[i].DominantShare > ts.Tenants[j].DominantShare })
	if len(ts.Tenants) > topTenants {
		ts.Tenants = ts.Tenants[:topTenants]
	}
	d.Tenants = ts.Tenants
	d.Pools, d.PoolsNote = c.pools(q)
	c.render(w, q, http.StatusOK, "overview", "overview.title", "", d)
}

// pools reads the capacity report of the last overviewWindow; without a
// ledger it returns a note instead.
func (c *Console) pools(q *Req) ([]poolRow, string) {
	now := c.opts.Now()
	since := now.Add(-overviewWindow)
	var ca ledger.CapacityAnswer
	err := c.api(q, "/allot/v1/capacity?since="+strconv.FormatInt(since.Unix(), 10)+"&until="+strconv.FormatInt(now.Unix(), 10), &ca)
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		return nil, q.L.T("overview.noledger")
	case err != nil:
		return nil, q.L.T("overview.nocapacity") + ": " + err.Error()
	}
	secs := ca.Until.Sub(ca.Since).Seconds()
	if secs <= 0 {
		secs = overviewWindow.Seconds()
	}
	rows := make([]poolRow, 0, len(ca.Pools))
	for _, u := range ca.Pools {
		r := poolRow{Pool: u.Pool, Model: u.Model, Capacity: u.Capacity / secs, Allocated: u.Allocated / secs,
			Idle: u.Idle / secs, Down: u.Down / secs, Waiting: u.Waiting / secs, Shortage: u.Shortage}
		r.AllocatedPct, r.IdlePct, r.DownPct = percent(r.Allocated, r.Capacity), percent(r.Idle, r.Capacity), percent(r.Down, r.Capacity)
		r.IdleX, r.DownX = r.AllocatedPct, r.AllocatedPct+r.IdlePct
		rows = append(rows, r)
	}
	return rows, ""
}
