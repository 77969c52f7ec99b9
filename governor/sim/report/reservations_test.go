//go:build simgrid

package report

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/sim"
	"github.com/allot-sh/allot/governor/sim/fleet"
)

// TestReservations measures why the lowest tenant's multi-node gangs
// wait although a starving head gets a reservation (docs/simulator.md,
// "Findings under contention"): per row, from every allot cycle's plan
// (sim.Options.OnCycle), time-weighted, which tenants' and classes' jobs
// hold the pool's reservation, whether the holder's tenant was below
// its nominal quota, how far ahead the reservation's start lies, how
// often the head changes; per gang of the lowest tenant, how long it
// queued before it first held the reservation and how long it held it;
// and the preemptions by cause and preemptor tenant. Run from the
// repository root:
//
//	GOMAXPROCS=1 go test -tags simgrid -run '^TestReservations$' -v -timeout 30m ./governor/sim/report/
//
// SIMGRID_ROW=1.5:2 picks one row (load:seed).
func TestReservations(t *testing.T) {
	spec, err := fleet.Load("../scenarios/standard.hcl")
	must.NoError(t, err)
	for _, c := range []struct {
		load float64
		seed int64
		low  string
	}{{1.2, 2, "research"}, {1.5, 2, "research"}, {2.0, 2, "research"}, {1.5, 1, "speech"}} {
		if only := os.Getenv("SIMGRID_ROW"); only != "" && only != fmt.Sprintf("%.1f:%d", c.load, c.seed) {
			continue
		}
		sc, err := sim.GenerateWith(spec, sim.StandardWeek(c.seed, c.load))
		must.NoError(t, err)
		opts := sim.DefaultOptions()
		opts.Seed = c.seed
		m := newResvMeter()
		m.lowTenant = c.low
		opts.OnCycle = m.cycle
		r, err := sim.Run(sc.Spec, sc.Jobs, sim.Allot, opts)
		must.NoError(t, err)
		sum := sim.Summarize(r)
		low := lowestTenant(sum)
		fmt.Printf("\nstandard load %.1f seed %d: share error %.3f, lowest %s\n", c.load, c.seed, sum.ShareError, low)
		m.print(r, low)
	}
}

// resvMeter accumulates reservation statistics over the cycles of a run.
type resvMeter struct {
	last     time.Time
	lastSnap map[string]resvHead
	// time-weighted seconds
	total, held         float64
	byTenant, byClass   map[string]float64
	headBelow, headLow  float64
	startAhead, unknown float64
	heads, switches     int
	prevHead            string
	headTime            map[string]float64
	firstHeadAt         map[string]time.Time
	queuedAt            map[string]time.Time
	preempt             map[string]int
	// lowTenant is the tenant whose queued gangs are split by their
	// first failing check (gang-seconds per check).
	lowTenant  string
	gangCheck  map[string]float64
	lastChecks map[string]int
	// borrow holds: time held, by tenant, start ahead (known) in hours.
	lastHolds                  []resvHead
	bhHeld, bhAhead, bhUnknown float64
	bhByTenant                 map[string]float64
}

type resvHead struct {
	tenant, class string
	below, lowest bool
	ahead         time.Duration
	known         bool
}

func newResvMeter() *resvMeter {
	return &resvMeter{byTenant: map[string]float64{}, byClass: map[string]float64{}, headTime: map[string]float64{}, firstHeadAt: map[string]time.Time{}, queuedAt: map[string]time.Time{},
		preempt: map[string]int{}, gangCheck: map[string]float64{}, bhByTenant: map[string]float64{}}
}

// cycle is sim.Options.OnCycle: it weighs the previous cycle's state by
// the time until this one, then records this cycle's.
func (m *resvMeter) cycle(snap *engine.Snapshot, plan *engine.Plan) {
	if !m.last.IsZero() {
		dt := snap.Now.Sub(m.last).Seconds()
		m.total += dt
		for key, h := range m.lastSnap {
			m.held += dt
			m.byTenant[h.tenant] += dt
			m.byClass[h.class] += dt
			if h.below {
				m.headBelow += dt
			}
			if h.lowest {
				m.headLow += dt
			}
			if h.known {
				m.startAhead += dt * h.ahead.Hours()
			} else {
				m.unknown += dt
			}
			m.headTime[key] += dt
		}
		for _, h := range m.lastHolds {
			m.bhHeld += dt
			m.bhByTenant[h.tenant] += dt
			if h.known {
				m.bhAhead += dt * h.ahead.Hours()
			} else {
				m.bhUnknown += dt
			}
		}
		for c, n := range m.lastChecks {
			m.gangCheck[c] += dt * float64(n)
		}
	}
	m.last = snap.Now
	jobs := map[string]*engine.Job{}
	for _, j := range snap.Jobs {
		jobs[j.Key()] = j
	}
	// Usage ÷ nominal per tenant with queued jobs: the lowest is the
	// most-starved tenant the reservation would serve first.
	ratio := map[string]float64{}
	for _, ts := range plan.Tenants {
		if ts.Queued > 0 && ts.Quota["gpu"] > 0 {
			ratio[ts.Namespace] = float64(ts.Usage["gpu"]) / float64(ts.Quota["gpu"])
		}
	}
	m.lastSnap = map[string]resvHead{}
	for _, rv := range plan.Reservations {
		j := jobs[rv.Job]
		if j == nil {
			continue
		}
		h := resvHead{tenant: j.Namespace, class: j.Class, known: !rv.Start.IsZero()}
		if h.known {
			h.ahead = rv.Start.Sub(snap.Now)
		}
		h.below = ratio[j.Namespace] < 1
		h.lowest = true
		for ns, r := range ratio {
			if ns != j.Namespace && r < ratio[j.Namespace] {
				h.lowest = false
			}
		}
		m.lastSnap[rv.Job] = h
		if rv.Job != m.prevHead {
			m.switches++
			if _, seen := m.firstHeadAt[rv.Job]; !seen {
				m.heads++
				m.firstHeadAt[rv.Job] = snap.Now
				m.queuedAt[rv.Job] = j.QueuedAt
			}
			m.prevHead = rv.Job
		}
	}
	if len(plan.Reservations) == 0 {
		m.prevHead = ""
	}
	m.lastHolds = nil
	for _, bh := range plan.BorrowHolds {
		ns, _, _ := strings.Cut(bh.Job, "/")
		h := resvHead{tenant: ns, known: !bh.Start.IsZero()}
		if h.known {
			h.ahead = bh.Start.Sub(snap.Now)
		}
		m.lastHolds = append(m.lastHolds, h)
	}
	m.lastChecks = map[string]int{}
	for _, j := range snap.Jobs {
		if j.Namespace != m.lowTenant || j.State != engine.Queued || gpusOf(j) <= gangGPUs {
			continue
		}
		name := "none"
		if v := plan.Verdicts[j.Key()]; v != nil {
			for _, c := range v.Checks {
				if !c.OK {
					name = c.Name
					break
				}
			}
			if name == "none" && strings.HasPrefix(v.Reason, "preempting") {
				name = "preempting"
			}
		}
		m.lastChecks[name]++
	}
	for _, p := range plan.Preemptions {
		m.preempt[p.Cause+" by "+p.Namespace]++
	}
}

func (m *resvMeter) print(r *sim.Result, low string) {
	pct := func(x float64) float64 { return 100 * x / m.total }
	fmt.Printf("reservation held %.0f %% of the time; %d heads, %d head changes; start ahead %.1f h on average (known), unknown %.0f %%\n",
		pct(m.held), m.heads, m.switches, m.startAhead/(m.held-m.unknown+1e-9), 100*m.unknown/(m.held+1e-9))
	fmt.Printf("holder below its nominal %.0f %% of the held time, holder the lowest usage÷nominal of tenants with queued jobs %.0f %%\n",
		100*m.headBelow/(m.held+1e-9), 100*m.headLow/(m.held+1e-9))
	fmt.Printf("held by tenant: %s\n", shareCells(m.byTenant, m.held))
	fmt.Printf("borrow hold %.0f %% of the time, by tenant: %s; start ahead %.1f h on average (known), unknown %.0f %%\n",
		pct(m.bhHeld), shareCells(m.bhByTenant, m.bhHeld), m.bhAhead/(m.bhHeld-m.bhUnknown+1e-9), 100*m.bhUnknown/(m.bhHeld+1e-9))
	fmt.Printf("held by class: %s\n", shareCells(m.byClass, m.held))
	var pre []string
	for k, n := range m.preempt {
		pre = append(pre, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(pre)
	fmt.Printf("preemptions: %s\n", strings.Join(pre, ", "))
	// The lowest tenant's gangs: queued before first head, time as head.
	var before, as []time.Duration
	never := 0
	var waitSum time.Duration
	for i := range r.Jobs {
		j := &r.Jobs[i]
		if j.Tenant != low || j.GPUs <= gangGPUs {
			continue
		}
		w, ok := j.Wait()
		if !ok {
			w = r.End - j.Submit
		}
		waitSum += w
		key := j.Tenant + "/" + j.ID
		at, ok := m.firstHeadAt[key]
		if !ok {
			never++
			continue
		}
		before = append(before, at.Sub(m.queuedAt[key]))
		as = append(as, time.Duration(m.headTime[key]*float64(time.Second)))
	}
	fmt.Printf("%s's queued gangs by first failing check (gang-hours): %s\n", low, shareCells(m.gangCheck, sumOf(m.gangCheck)))
	fmt.Printf("%s's gangs: mean wait %.1f h; %d never held the reservation; queued before first holding it %s h; held it %s h (n / mean / p95)\n",
		low, waitSum.Hours()/float64(len(before)+never), never, statsCell(before), statsCell(as))
}

func shareCells(m map[string]float64, total float64) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var cells []string
	for _, k := range keys {
		cells = append(cells, fmt.Sprintf("%s %.0f %%", k, 100*m[k]/(total+1e-9)))
	}
	return strings.Join(cells, ", ")
}

func sumOf(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

// gpusOf counts the devices job j asks for.
func gpusOf(j *engine.Job) int {
	n := 0
	for _, g := range j.Groups {
		for _, d := range g.Devices {
			n += g.Count * d.Count
		}
	}
	return n
}
