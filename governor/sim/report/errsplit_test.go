//go:build simgrid

package report

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/sim"
)

// idleMark is the number of free GPUs from which an instant counts as
// "GPUs idle" rather than "cluster full" (one node's worth and a half).
const idleMark = 12

// TestShareErrorSplit measures where allot's share error comes from
// (docs/simulator.md, "Findings under contention"): every allot cycle
// (sim.Options.OnCycle), weighted by the time until the next, each
// tenant's GPUs held are compared with its entitlement (the report's
// weighted max-min share of the cluster among the tenants' demands).
// What a tenant lacks is split by whether idleMark or more GPUs were
// free then and by its first queued job in queue order (a job of at
// most 8 GPUs before a gang): its size and first failing check; what
// a tenant holds beyond its entitlement is summed per tenant. It also
// measures how long a queued gang was no larger than the free GPUs (a
// move could have let it run) and those free GPU-hours, and the job-size
// floor (sizeFloor: what even free preemption could not avoid with the
// jobs at hand) and, per tenant, the GPUs it held against its
// entitlement and against the most a subset of its jobs could hold
// without exceeding the entitlement. SPLIT_TENANT=1 splits what tenants lack by tenant too;
// SPLIT_ONSTOP=1 runs with checkpoints on stop (-checkpoint-on-stop),
// SPLIT_RULE and SPLIT_CLASSES set fair_share_rule and fair_share_classes
// (unset: the governor's defaults).
// Run from the repository root:
//
//	SIMGRID_ROWS=1.2:3,1.5:1 GOMAXPROCS=1 go test -tags simgrid -run '^TestShareErrorSplit$' -v -timeout 30m ./governor/sim/report/
//
// (standard scenario, load:seed pairs; default 1.2:3,1.5:1).
func TestShareErrorSplit(t *testing.T) {
	for _, row := range standardRows(t, "1.2:3,1.5:1") {
		opts := sim.DefaultOptions()
		opts.Seed = row.seed
		opts.CheckpointOnStop = os.Getenv("SPLIT_ONSTOP") != ""
		if rule := os.Getenv("SPLIT_RULE"); rule != "" {
			opts.Engine.FairShareRule = rule
		}
		if classes := os.Getenv("SPLIT_CLASSES"); classes != "" {
			opts.Engine.FairClasses = classes
		}
		m := &errMeter{gpus: row.sc.Spec.GPUs(), under: map[string]float64{}, over: map[string]float64{}}
		opts.OnCycle = m.cycle
		r, err := sim.Run(row.sc.Spec, row.sc.Jobs, sim.Allot, opts)
		must.NoError(t, err)
		sum := sim.Summarize(r)
		must.Positive(t, m.entSum)
		fmt.Printf("\nstandard load %.1f seed %d: share error %.3f, useful %.1f %%\n", row.load, row.seed, sum.ShareError, 100*sum.UsefulRate)
		m.print()
	}
}

// errMeter accumulates, in GPU-seconds, what tenants lack and hold
// beyond their entitlement over the cycles of a run.
type errMeter struct {
	gpus      int
	first     time.Time
	last      time.Time
	names     []string
	weights   []int
	limits    []int
	lastUnder map[string]float64
	lastOver  map[string]float64
	lastEnt   float64
	lastFree  float64 // free GPUs while a queued gang would fit them by count
	lastGang  bool
	under     map[string]float64
	over      map[string]float64
	entSum    float64
	gangTime  float64
	gangFree  float64
	total     float64
	lastFloor float64 // Σ over tenants of the nearest any subset of its jobs comes to its entitlement
	floor     float64
	// Per tenant (names order), GPU-seconds entitled, held, and reachable:
	// the largest sum of a subset of its unfinished jobs' GPU counts that
	// stays within its entitlement (what a scheduler could give it without
	// giving it more than its share).
	lastTen, lastHeld, lastReach []float64
	ten, got, reach              []float64
}

func (m *errMeter) cycle(snap *engine.Snapshot, plan *engine.Plan) {
	if !m.last.IsZero() {
		dt := snap.Now.Sub(m.last).Seconds()
		m.total += dt
		for k, v := range m.lastUnder {
			m.under[k] += v * dt
		}
		for k, v := range m.lastOver {
			m.over[k] += v * dt
		}
		m.entSum += m.lastEnt * dt
		m.floor += m.lastFloor * dt
		for i := range m.lastTen {
			if snap.Now.Sub(m.first) > sim.Week {
				break // the per-tenant figures cover the submission span, as the report's
			}
			m.ten[i] += m.lastTen[i] * dt
			m.got[i] += m.lastHeld[i] * dt
			m.reach[i] += m.lastReach[i] * dt
		}
		if m.lastGang {
			m.gangTime += dt
			m.gangFree += m.lastFree * dt
		}
	}
	m.last = snap.Now
	if m.first.IsZero() {
		m.first = snap.Now
	}
	if m.names == nil {
		for ns := range snap.Tenants {
			m.names = append(m.names, ns)
		}
		sort.Strings(m.names)
		for _, ns := range m.names {
			m.weights = append(m.weights, int(snap.Tenants[ns].Quota["gpu"]))
			m.limits = append(m.limits, int(snap.Tenants[ns].Limit["gpu"]))
		}
	}
	held, demand := m.heldAndDemand(snap)
	claim := append([]int(nil), demand...)
	for i, l := range m.limits {
		if l > 0 && claim[i] > l {
			claim[i] = l
		}
	}
	ent := sim.FairShare(m.gpus, m.weights, claim)
	m.lastFloor, m.lastReach = m.sizeFloor(snap, ent)
	if m.ten == nil {
		m.ten, m.got, m.reach = make([]float64, len(m.names)), make([]float64, len(m.names)), make([]float64, len(m.names))
	}
	m.lastTen, m.lastHeld = ent, make([]float64, len(held))
	for i, h := range held {
		m.lastHeld[i] = float64(h)
	}
	busy := 0
	for _, h := range held {
		busy += h
	}
	free := m.gpus - busy
	state := "full"
	if free >= idleMark {
		state = "idle"
	}
	m.lastGang, m.lastFree = smallestQueuedGang(snap) <= free, float64(free)
	first := firstQueued(snap, plan)
	m.lastUnder, m.lastOver, m.lastEnt = map[string]float64{}, map[string]float64{}, 0
	for i, ns := range m.names {
		m.lastEnt += ent[i]
		if d := ent[i] - float64(held[i]); d > 0 {
			what := first[ns]
			if what == "" {
				what = "nothing queued"
			}
			if os.Getenv("SPLIT_TENANT") != "" {
				what = ns + " " + what
			}
			m.lastUnder[state+" | "+what] += d
			m.lastUnder[state+" | (all)"] += d
		} else {
			m.lastOver[ns] -= d
		}
	}
}

// heldAndDemand returns per tenant (m.names order) the GPUs its live
// allocations hold and those its unfinished jobs ask for.
func (m *errMeter) heldAndDemand(snap *engine.Snapshot) (held, demand []int) {
	idx := map[string]int{}
	for i, n := range m.names {
		idx[n] = i
	}
	held, demand = make([]int, len(m.names)), make([]int, len(m.names))
	for _, a := range snap.Allocs {
		if i, ok := idx[a.Namespace]; ok && a.Live {
			for _, n := range a.Devices {
				held[i] += n
			}
		}
	}
	for _, j := range snap.Jobs {
		if i, ok := idx[j.Namespace]; ok && !j.Dead {
			demand[i] += gpusOf(j)
		}
	}
	return held, demand
}

// sizeFloor is the share error no scheduler could avoid at this instant
// with these jobs: per tenant, the distance from its entitlement to the
// nearest sum of a subset of its unfinished jobs' GPU counts (free
// preemption, no placement, no capacity limit: a lower bound). It also
// returns per tenant the largest such sum within the entitlement.
func (m *errMeter) sizeFloor(snap *engine.Snapshot, ent []float64) (float64, []float64) {
	counts := map[string]map[int]int{}
	for _, j := range snap.Jobs {
		if j.Dead {
			continue
		}
		if counts[j.Namespace] == nil {
			counts[j.Namespace] = map[int]int{}
		}
		counts[j.Namespace][gpusOf(j)]++
	}
	var floor float64
	within := make([]float64, len(m.names))
	for i, ns := range m.names {
		reach := subsetSums(counts[ns], m.gpus)
		floor += nearestSum(reach, ent[i])
		for s := int(ent[i]); s >= 0; s-- {
			if reach[s] {
				within[i] = float64(s)
				break
			}
		}
	}
	return floor, within
}

// nearestSum is min |S − target| over the sums S reach marks.
func nearestSum(reach []bool, target float64) float64 {
	best := target
	for s, ok := range reach {
		if d := math.Abs(float64(s) - target); ok && d < best {
			best = d
		}
	}
	return best
}

// subsetSums marks the sums S ≤ limit of subsets of a multiset of sizes
// (size → count), by a bounded knapsack with the counts split in powers
// of two.
func subsetSums(counts map[int]int, limit int) []bool {
	reach := make([]bool, limit+1)
	reach[0] = true
	for size, n := range counts {
		for k := 1; n > 0 && size > 0; k *= 2 {
			take := minInt(k, n)
			n -= take
			step := take * size
			for s := limit - step; s >= 0; s-- {
				if reach[s] {
					reach[s+step] = true
				}
			}
		}
	}
	return reach
}

// smallestQueuedGang is the GPU count of the smallest queued multi-node
// gang, a large number when none is queued.
func smallestQueuedGang(snap *engine.Snapshot) int {
	least := 1 << 30
	for _, j := range snap.Jobs {
		if n := gpusOf(j); j.State == engine.Queued && n > gangGPUs && n < least {
			least = n
		}
	}
	return least
}

// firstQueued describes, per tenant, its first queued job in queue order
// (one of at most 8 GPUs before a gang): "small" or "gang", its first
// failing check and its class.
func firstQueued(snap *engine.Snapshot, plan *engine.Plan) map[string]string {
	jobs := map[string]*engine.Job{}
	for _, j := range snap.Jobs {
		jobs[j.Key()] = j
	}
	out := map[string]string{}
	for _, v := range plan.Queue {
		j := jobs[v.Namespace+"/"+v.JobID]
		if j == nil {
			continue
		}
		kind := "small"
		if gpusOf(j) > gangGPUs {
			kind = "gang"
		}
		if prev, ok := out[v.Namespace]; ok && !(strings.HasPrefix(prev, "gang") && kind == "small") {
			continue
		}
		check := "none"
		for _, c := range v.Checks {
			if !c.OK {
				check = c.Name
				switch {
				case c.Name != "order":
				case strings.Contains(c.Detail, "lending is held"):
					check = "order/lend-hold"
				default:
					check = "order/reservation"
				}
				break
			}
		}
		out[v.Namespace] = kind + " " + check + " (" + j.Class + ")"
	}
	return out
}

func (m *errMeter) print() {
	var lack, extra float64
	type kv struct {
		k string
		v float64
	}
	var rows []kv
	for k, v := range m.under {
		if strings.HasSuffix(k, "(all)") {
			lack += v
		}
		rows = append(rows, kv{k, v})
	}
	sort.Slice(rows, func(a, b int) bool { return rows[a].v > rows[b].v })
	for _, v := range m.over {
		extra += v
	}
	fmt.Printf("per cycle, ÷ Σ entitled: lacking %.3f, beyond %.3f (share error %.3f)\n", lack/m.entSum, extra/m.entSum, (lack+extra)/m.entSum)
	fmt.Printf("job-size floor (nearest subset of each tenant's jobs to its entitlement): %.3f\n", m.floor/m.entSum)
	fmt.Printf("a queued gang no larger than the free GPUs: %.0f %% of the time, %.3f of all GPU-time free then\n",
		100*m.gangTime/m.total, m.gangFree/(float64(m.gpus)*m.total))
	for i, ns := range m.names {
		fmt.Printf("beyond  %-10s %.3f   held ÷ entitled %.3f, ÷ reachable within it %.3f\n", ns, m.over[ns]/m.entSum, m.got[i]/m.ten[i], m.got[i]/m.reach[i])
	}
	for _, r := range rows[:minInt(len(rows), 24)] {
		fmt.Printf("lacking %-40s %.3f\n", r.k, r.v/m.entSum)
	}
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}
