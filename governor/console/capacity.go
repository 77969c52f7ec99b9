package console

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/ledger"
)

// capacityBuckets is how many slices of the window the trend lines draw.
const capacityBuckets = 12

// capacityRow is one pool and model over the window: device-hours of each
// part of its capacity, their shares, the queued demand and the trend.
type capacityRow struct {
	Pool, Model                              string
	Capacity, Allocated, Idle, Down, Waiting float64 // device-hours
	AllocatedPct, IdlePct, DownPct           float64
	IdleX, DownX                             float64 // where the idle and down parts start
	// WaitingPct is the queued demand as a share of the capacity that was
	// up (the ledger's Shortage), capped at 100 for the bar.
	WaitingPct, WaitingBar float64
	Short, Overbooked      bool
	// Trend: the allocated (and waiting) share of each slice of the
	// window, as SVG polyline points in a 120×30 box.
	AllocLine, WaitLine string
}

// capacityData is the capacity page.
type capacityData struct {
	Window  window
	Windows []choice
	Rows    []capacityRow
	// Shortest is the pool and model with the most demand waiting for its
	// capacity ("" when none is short).
	Shortest      string
	ShortestShare float64
	Note          string
}

// capacity serves /ui/capacity: Allocated, Idle, Down and Reserved-waiting
// per pool and model over a window, most short first.
func (c *Console) capacity(w http.ResponseWriter, q *Req) {
	win := c.readWindow(q.R)
	d := capacityData{Window: win}
	for _, o := range reportWindows {
		d.Windows = append(d.Windows, choice{o.Code, q.L.T("window." + o.Code), o.Code == win.Code})
	}
	var ca ledger.CapacityAnswer
	if err := c.api(q, "/allot/v1/capacity?"+win.params().Encode(), &ca); err != nil {
		c.ledgerFail(w, q, err, "capacity", "capacity.title", &d.Note, d)
		return
	}
	trend := c.capacityTrend(q, win)
	for _, u := range ca.Pools {
		r := capacityRowOf(u)
		r.AllocLine, r.WaitLine = trend.lines(u.Pool + "\x00" + u.Model)
		d.Rows = append(d.Rows, r)
	}
	// The API sorts most short first.
	if len(d.Rows) > 0 && d.Rows[0].Short {
		d.Shortest, d.ShortestShare = d.Rows[0].Pool+" "+d.Rows[0].Model, d.Rows[0].WaitingPct
	}
	c.render(w, q, http.StatusOK, "capacity", "capacity.title", "", d)
}

// capacityRowOf converts a ledger row (device-seconds) to device-hours
// and bar geometry.
func capacityRowOf(u ledger.Utilization) capacityRow {
	r := capacityRow{Pool: u.Pool, Model: u.Model, Capacity: u.Capacity / 3600, Allocated: u.Allocated / 3600,
		Idle: u.Idle / 3600, Down: u.Down / 3600, Waiting: u.Waiting / 3600,
		WaitingPct: 100 * u.Shortage, Short: u.Shortage > 0, Overbooked: u.Overbooked}
	r.AllocatedPct, r.IdlePct, r.DownPct = percent(u.Allocated, u.Capacity), percent(u.Idle, u.Capacity), percent(u.Down, u.Capacity)
	r.IdleX, r.DownX = r.AllocatedPct, r.AllocatedPct+r.IdlePct
	r.WaitingBar = r.WaitingPct
	if r.WaitingBar > 100 {
		r.WaitingBar = 100
	}
	return r
}

// capacitySeries is, per pool and model, the allocated and waiting share
// of each slice of the window (-1 where the slice has no row).
type capacitySeries map[string][2][]float64

// capacityTrend reads the capacity report of each slice of the window.
func (c *Console) capacityTrend(q *Req, win window) capacitySeries {
	step := win.Until.Sub(win.Since) / capacityBuckets
	out := capacitySeries{}
	for i := 0; i < capacityBuckets; i++ {
		s := win.Since.Add(time.Duration(i) * step)
		var ca ledger.CapacityAnswer
		if err := c.api(q, "/allot/v1/capacity?"+(window{Since: s, Until: s.Add(step)}).params().Encode(), &ca); err != nil {
			return nil
		}
		for _, u := range ca.Pools {
			k := u.Pool + "\x00" + u.Model
			v, ok := out[k]
			if !ok {
				v = [2][]float64{filled(capacityBuckets, -1), filled(capacityBuckets, -1)}
			}
			v[0][i] = percent(u.Allocated, u.Capacity)
			v[1][i] = percent(u.Waiting, u.Capacity-u.Down)
			out[k] = v
		}
	}
	return out
}

// lines renders a row's two series as polyline points ("" without data).
func (s capacitySeries) lines(key string) (string, string) {
	v, ok := s[key]
	if !ok {
		return "", ""
	}
	return polyline(v[0]), polyline(v[1])
}

// polyline places percentages in a 120×30 box, one point per slice;
// slices without data are skipped.
func polyline(pcts []float64) string {
	var b strings.Builder
	for i, p := range pcts {
		if p < 0 {
			continue
		}
		x := float64(i) * 120 / float64(len(pcts)-1)
		fmt.Fprintf(&b, "%.1f,%.1f ", x, 30-p*0.3)
	}
	return strings.TrimSpace(b.String())
}

func filled(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
