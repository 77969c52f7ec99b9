package console

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/ledger"
)

// Windows a report view offers, shortest first; defaultWindow is
// reportWindows[1].
var reportWindows = []struct {
	Code string
	D    time.Duration
}{{"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}}

// usageGroupings are the -by choices of the usage view.
var usageGroupings = []string{"tenant", "model", "pool"}

// usageBars is how many groups the usage chart draws.
const usageBars = 15

// usageBuckets is how many slices of the window the trend chart draws.
const usageBuckets = 12

// window is a report view's time window, read from ?window=.
type window struct {
	Code         string
	Since, Until time.Time
}

// readWindow reads ?window= (1h, 24h, 7d, 30d; default 24h) ending now, at
// whole seconds, as the CLI sends it.
func (c *Console) readWindow(r *http.Request) window {
	w := reportWindows[1]
	for _, o := range reportWindows {
		if o.Code == r.URL.Query().Get("window") {
			w = o
		}
	}
	until := c.opts.Now().UTC().Truncate(time.Second)
	return window{Code: w.Code, Since: until.Add(-w.D), Until: until}
}

// params are the API parameters of the window (RFC 3339, as allotctl
// report sends them).
func (w window) params() url.Values {
	return url.Values{"since": {w.Since.Format(time.RFC3339)}, "until": {w.Until.Format(time.RFC3339)}}
}

// choice is one option of a view's selector.
type choice struct {
	Value, Label string
	Selected     bool
}

// usageData is the usage page.
type usageData struct {
	Window   window
	Windows  []choice
	By       string
	Groups   []choice
	Header   []string
	Rows     [][]string
	Bars     []bar
	ChartH   float64
	Trend    []bar
	TrendMax float64
	Cost     *ledger.CostAnswer
	CostRows []costRow
	CSVURL   string
	Note     string
}

// Geometry of the horizontal bar chart (SVG user units, 640 wide).
const (
	barRow    = 24  // height of one bar's row
	barLeft   = 220 // where the bars start (labels to the left)
	barLength = 340 // the longest bar
	barLabel  = 28  // characters of a label shown
)

// bar is one bar of a chart, placed in the chart's coordinates (the
// templates only print numbers: html/template escapes them all).
type bar struct {
	Label string
	Value float64
	Pct   float64
	// Horizontal chart: the label's baseline, the bar's top and length,
	// where its value is written.
	TextY, RectY, W, ValueX float64
	// Column chart: the column's left, top and height; ShowLabel on every
	// other column.
	X, Y, H   float64
	ShowLabel bool
}

// hbars lays out horizontal bars for labels and values, longest = max.
func hbars(labels []string, values []float64) ([]bar, float64) {
	var max float64
	for _, v := range values {
		if v > max {
			max = v
		}
	}
	out := make([]bar, len(values))
	for i, v := range values {
		pct := percent(v, max)
		top := float64(i * barRow)
		out[i] = bar{Label: clip(labels[i], barLabel), Value: v, Pct: pct, TextY: top + 16, RectY: top + 4,
			W: pct * barLength / 100, ValueX: barLeft + pct*barLength/100 + 6}
	}
	return out, float64(len(values)*barRow + 4)
}

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// costRow is one priced group.
type costRow struct {
	Group                        string
	DeviceHours, Allocated, Used float64
	UsedKnown                    bool
	IdleShare, Total             float64
}

// usage serves /ui/usage: use per tenant, model or pool over a window,
// its chart and its price.
func (c *Console) usage(w http.ResponseWriter, q *Req) {
	win := c.readWindow(q.R)
	by := q.R.URL.Query().Get("by")
	if !contains(usageGroupings, by) {
		by = usageGroupings[0]
	}
	d := usageData{Window: win, By: by}
	for _, o := range reportWindows {
		d.Windows = append(d.Windows, choice{o.Code, q.L.T("window." + o.Code), o.Code == win.Code})
	}
	for _, g := range usageGroupings {
		d.Groups = append(d.Groups, choice{g, q.L.T("by." + g), g == by})
	}
	p := win.params()
	p.Set("by", by)
	var ua ledger.UsageAnswer
	if err := c.api(q, "/allot/v1/usage?"+p.Encode(), &ua); err != nil {
		c.ledgerFail(w, q, err, "usage", "usage.title", &d.Note, d)
		return
	}
	d.CSVURL = Prefix + "usage.csv?" + p.Encode()
	_, d.Rows = ledger.UsageTable(ua)
	d.Header = usageHeader(q.L, ua.By)
	d.Bars, d.ChartH = usageChart(ua)
	var ca ledger.CostAnswer
	if err := c.api(q, "/allot/v1/cost?"+p.Encode(), &ca); err == nil {
		d.Cost, d.CostRows = &ca, costRows(ca)
	}
	d.Trend, d.TrendMax = c.usageTrend(q, win)
	c.render(w, q, http.StatusOK, "usage", "usage.title", "", d)
}

// ledgerFail shows a view without a ledger (404 from the API) with a
// note, and any other error as the error page.
func (c *Console) ledgerFail(w http.ResponseWriter, q *Req, err error, page, title string, note *string, d any) {
	if statusOf(err) == http.StatusNotFound {
		*note = q.L.T("ledger.off")
		c.render(w, q, http.StatusOK, page, title, "", d)
		return
	}
	c.apiFail(w, q, err)
}

// usageCSV serves /ui/usage.csv: the usage report of the window and
// grouping in the query, as `allotctl report usage -csv` prints it.
func (c *Console) usageCSV(w http.ResponseWriter, q *Req) {
	v := q.R.URL.Query()
	p := url.Values{}
	for _, k := range []string{"since", "until", "by"} {
		if v.Get(k) != "" {
			p.Set(k, v.Get(k))
		}
	}
	var ua ledger.UsageAnswer
	if err := c.api(q, "/allot/v1/usage?"+p.Encode(), &ua); err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	header, rows := ledger.UsageTable(ua)
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="allot-usage.csv"`)
	_ = ledger.WriteCSV(w, header, rows)
}

// usageColumns are the catalogue keys of ledger.UsageTable's number columns.
var usageColumns = []string{"usage.col.allocs", "usage.devh", "usage.col.used", "usage.col.run", "usage.col.wait",
	"usage.col.failed", "usage.col.preempted", "usage.col.restarts", "usage.col.lost"}

// usageHeader is ledger.UsageTable's header in the page's language (the CSV
// keeps allotctl's English one).
func usageHeader(l Lang, by []string) []string {
	var out []string
	for _, b := range ledger.UsageKeyColumns(by) {
		out = append(out, l.T(groupColumn(b)))
	}
	for _, k := range usageColumns {
		out = append(out, l.T(k))
	}
	return out
}

// groupColumn is the catalogue key of a grouping column's title.
func groupColumn(by string) string {
	switch by {
	case "tenant", "model", "pool":
		return "col." + by
	}
	return "usage.col." + by
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// groupLabel joins a row's key values in by's order.
func groupLabel(key map[string]string, by []string) string {
	parts := make([]string, 0, len(by))
	for _, b := range ledger.UsageKeyColumns(by) {
		if v := key[b]; v != "" {
			parts = append(parts, v)
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " · ")
}

// usageChart is the device-hours of the largest groups as bars, and the
// chart's height.
func usageChart(ua ledger.UsageAnswer) ([]bar, float64) {
	rows := append([]ledger.Usage(nil), ua.Rows...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].DeviceMS > rows[j].DeviceMS })
	if len(rows) > usageBars {
		rows = rows[:usageBars]
	}
	labels, values := make([]string, len(rows)), make([]float64, len(rows))
	for i, r := range rows {
		labels[i], values[i] = groupLabel(r.Key, ua.By), float64(r.DeviceMS)/3.6e6
	}
	return hbars(labels, values)
}

// usageTrend is the visible device-hours in each of usageBuckets slices
// of the window (one report per slice, grouped by tenant and summed).
func (c *Console) usageTrend(q *Req, win window) ([]bar, float64) {
	step := win.Until.Sub(win.Since) / usageBuckets
	out := make([]bar, 0, usageBuckets)
	var max float64
	for i := 0; i < usageBuckets; i++ {
		s := win.Since.Add(time.Duration(i) * step)
		slice := window{Since: s, Until: s.Add(step)}
		var ua ledger.UsageAnswer
		if err := c.api(q, "/allot/v1/usage?"+slice.params().Encode(), &ua); err != nil {
			return nil, 0
		}
		var ms int64
		for _, r := range ua.Rows {
			ms += r.DeviceMS
		}
		h := float64(ms) / 3.6e6
		if h > max {
			max = h
		}
		out = append(out, bar{Label: s.Format("01-02 15:04"), Value: h})
	}
	// Columns 40 wide every 50 from x=44; 100 units high above y=110.
	for i := range out {
		b := &out[i]
		b.Pct = percent(b.Value, max)
		b.X, b.H, b.ShowLabel = float64(44+50*i), b.Pct, i%2 == 0
		b.Y = 110 - b.H
	}
	return out, max
}

// costRows prices each group (the cost report groups by model as well:
// the rows of one group are added up).
func costRows(ca ledger.CostAnswer) []costRow {
	idx := map[string]int{}
	var out []costRow
	for _, r := range ca.Rows {
		g := groupLabel(r.Key, ca.By)
		i, ok := idx[g]
		if !ok {
			i = len(out)
			idx[g] = i
			out = append(out, costRow{Group: g})
		}
		row := &out[i]
		row.DeviceHours += r.Devices
		row.Allocated += r.Allocated
		row.Used += r.Used
		row.UsedKnown = row.UsedKnown || r.UsedCoverage > 0
		row.IdleShare += r.IdleShare
		row.Total = row.Allocated + row.IdleShare
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Total > out[j].Total })
	return out
}
