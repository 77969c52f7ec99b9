package console

import (
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/ledger"
)

// overviewWindow is the window of the overview's pool history.
const overviewWindow = time.Hour

// topTenants is how many tenants the overview lists.
const topTenants = 5

// poolRow is one pool and device model: its devices now (Live false for
// a pool only the history knows), the last window's averages (Hist, nil
// without them); the *Pct fields draw the bar of the live split.
type poolRow struct {
	Pool, Model                                  string
	Live                                         bool
	Capacity, Allocated, Idle, Down, Reserved    int64
	AllocatedPct, IdlePct, DownPct, IdleX, DownX float64
	Hist                                         *histRow
}

// histRow is a pool's average devices over the last overviewWindow, from
// the ledger's capacity report.
type histRow struct {
	Capacity, Allocated, Idle, Down, Waiting float64
}

// overviewData is the overview page.
type overviewData struct {
	Pools []poolRow
	// Holds are the cohorts whose lending a starved queue head holds
	// (/allot/v1/pools, filtered like the API).
	Holds []holdRow
	// PoolsNote says why the live pool figures are missing, "" otherwise.
	PoolsNote string
	// HistNote says why the history is missing (no ledger), "" otherwise.
	HistNote      string
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
	d.Pools, d.Holds, d.PoolsNote = c.livePools(q)
	d.HistNote = c.poolHistory(q, &d.Pools)
	c.render(w, q, http.StatusOK, "overview", "overview.title", "", d)
}

// holdRow is one cohort whose lending a starved queue head holds: the
// head's namespace and ID ("" when the caller may not read them) and
// when it may borrow enough (zero: unknown).
type holdRow struct {
	Cohort, Namespace, JobID string
	Start                    time.Time
}

// livePools reads every pool and model now and the cohorts' borrow holds
// (/allot/v1/pools: the governor's live snapshot and latest plan); on
// failure it returns a note instead.
func (c *Console) livePools(q *Req) ([]poolRow, []holdRow, string) {
	var pl allotapi.Pools
	if err := c.api(q, "/allot/v1/pools", &pl); err != nil {
		return nil, nil, q.L.T("overview.nolive") + ": " + err.Error()
	}
	holds := make([]holdRow, 0, len(pl.BorrowHolds))
	for _, h := range pl.BorrowHolds {
		r := holdRow{Cohort: h.Cohort}
		if ns, id, ok := strings.Cut(h.Job, "/"); ok {
			r.Namespace, r.JobID = ns, id
		}
		if h.Start != nil {
			r.Start = *h.Start
		}
		holds = append(holds, r)
	}
	rows := make([]poolRow, 0, len(pl.Pools))
	for _, p := range pl.Pools {
		r := poolRow{Pool: p.Pool, Model: p.Model, Live: true, Capacity: p.Capacity, Allocated: p.Allocated,
			Idle: p.Idle, Down: p.Down, Reserved: p.Reserved}
		cp := float64(p.Capacity)
		r.AllocatedPct, r.IdlePct, r.DownPct = percent(float64(p.Allocated), cp), percent(float64(p.Idle), cp), percent(float64(p.Down), cp)
		r.IdleX, r.DownX = r.AllocatedPct, r.AllocatedPct+r.IdlePct
		rows = append(rows, r)
	}
	return rows, holds, ""
}

// poolHistory adds the ledger's averages over the last overviewWindow to
// rows (a pool only the ledger knows gets a row of its own); without a
// ledger, or when its report fails, it returns a note instead.
func (c *Console) poolHistory(q *Req, rows *[]poolRow) string {
	now := c.opts.Now()
	since := now.Add(-overviewWindow)
	var ca ledger.CapacityAnswer
	err := c.api(q, "/allot/v1/capacity?since="+strconv.FormatInt(since.Unix(), 10)+"&until="+strconv.FormatInt(now.Unix(), 10), &ca)
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		return q.L.T("overview.nohistory")
	case err != nil:
		return q.L.T("overview.histfail") + ": " + err.Error()
	}
	secs := ca.Until.Sub(ca.Since).Seconds()
	if secs <= 0 {
		secs = overviewWindow.Seconds()
	}
	at := map[[2]string]int{}
	for i, r := range *rows {
		at[[2]string{r.Pool, r.Model}] = i
	}
	for _, u := range ca.Pools {
		h := &histRow{Capacity: u.Capacity / secs, Allocated: u.Allocated / secs, Idle: u.Idle / secs,
			Down: u.Down / secs, Waiting: u.Waiting / secs}
		if i, ok := at[[2]string{u.Pool, u.Model}]; ok {
			(*rows)[i].Hist = h
			continue
		}
		*rows = append(*rows, poolRow{Pool: u.Pool, Model: u.Model, Hist: h})
	}
	return ""
}
