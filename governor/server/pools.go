package server

import (
	"net/http"
	"sort"
	"strings"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/engine"
)

// pools answers GET /allot/v1/pools: every pool and device model now,
// from the live snapshot (the same nodes and allocations the engine
// decides on) and the latest plan's reservations. Per-pool totals name no
// tenant, so every caller that may read some namespace gets them, as with
// /allot/v1/capacity. The plan's borrow holds are filtered by the caller
// (BorrowHoldsOf).
func (s *Server) pools(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	p, ok := s.latest(w)
	if !ok {
		return
	}
	now := s.now()
	snap := s.Store.Snapshot(now)
	allotapi.WriteJSON(w, http.StatusOK, allotapi.Pools{At: now, Pools: PoolsOf(snap.Nodes, snap.Allocs, p.Reservations, s.Store.Job),
		BorrowHolds: BorrowHoldsOf(p.BorrowHolds, p.Tenants, c.CanRead)})
}

// BorrowHoldsOf is the plan's borrow holds as a caller that may read the
// namespaces canRead accepts sees them: a cohort's hold when the caller
// may read one of its tenants, the head's name when it may read the
// head's namespace (else auth.Hidden). Never nil.
func BorrowHoldsOf(holds []engine.BorrowHold, tenants []engine.TenantStatus, canRead func(string) bool) []allotapi.BorrowHold {
	readable := map[string]bool{}
	for _, t := range tenants {
		if !readable[t.Cohort] && canRead(t.Namespace) {
			readable[t.Cohort] = true
		}
	}
	out := []allotapi.BorrowHold{}
	for _, h := range holds {
		if !readable[h.Cohort] {
			continue
		}
		b := allotapi.BorrowHold{Cohort: h.Cohort, Job: auth.Hidden}
		if ns, _, ok := strings.Cut(h.Job, "/"); ok && canRead(ns) {
			b.Job = h.Job
		}
		if !h.Start.IsZero() {
			start := h.Start
			b.Start = &start
		}
		out = append(out, b)
	}
	return out
}

type poolKey struct{ pool, model string }

// PoolsOf counts the devices of nodes per pool and model: allocated (what
// allocations that hold resources have), down (unhealthy, or on a node
// that is not ready and eligible, but never a device in use: a draining
// node's running work stays allocated, as the ledger counts it), idle (the
// rest), and reserved for the starving heads of reservations.
func PoolsOf(nodes []*engine.Node, allocs []*engine.Alloc, res []engine.Reservation, job func(ns, id string) (*engine.Job, bool)) []allotapi.Pool {
	used := map[string]map[string]int{}
	for _, a := range allocs {
		if !a.Live && !a.Stopping {
			continue
		}
		if used[a.NodeID] == nil {
			used[a.NodeID] = map[string]int{}
		}
		for model, n := range a.Devices {
			used[a.NodeID][model] += n
		}
	}
	m := map[poolKey]*allotapi.Pool{}
	for _, n := range nodes {
		for i := range n.Devices {
			addGroup(m, n, &n.Devices[i], used[n.ID][n.Devices[i].ID()])
		}
	}
	addReserved(m, nodes, res, job)
	out := make([]allotapi.Pool, 0, len(m))
	for _, p := range m {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pool != out[j].Pool {
			return out[i].Pool < out[j].Pool
		}
		return out[i].Model < out[j].Model
	})
	return out
}

// addGroup adds one device group of node n, of which inUse are allocated.
func addGroup(m map[poolKey]*allotapi.Pool, n *engine.Node, g *engine.DeviceGroup, inUse int) {
	k := poolKey{pool: engine.PoolName(n.Pool), model: g.ID()}
	p := m[k]
	if p == nil {
		p = &allotapi.Pool{Pool: k.pool, Model: k.model}
		m[k] = p
	}
	total := int64(g.Instances)
	if total < int64(g.Healthy) {
		total = int64(g.Healthy)
	}
	alloc := clamp(int64(inUse), 0, total)
	down := total - int64(g.Healthy)
	if !n.Ready {
		down = total
	}
	down = clamp(down, 0, total-alloc)
	p.Capacity += total
	p.Allocated += alloc
	p.Down += down
	p.Idle += total - alloc - down
}

// addReserved adds what each reservation's head asks for (count ×
// devices of each group) to its pool's models. A request that names no
// model ("nvidia/gpu") counts for the one model of the reserved nodes it
// matches, and for none when it matches several.
func addReserved(m map[poolKey]*allotapi.Pool, nodes []*engine.Node, res []engine.Reservation, job func(ns, id string) (*engine.Job, bool)) {
	byID := make(map[string]*engine.Node, len(nodes))
	for _, n := range nodes {
		byID[n.ID] = n
	}
	for _, r := range res {
		ns, id, ok := strings.Cut(r.Job, "/")
		if !ok {
			continue
		}
		j, ok := job(ns, id)
		if !ok {
			continue
		}
		for _, g := range j.Groups {
			for _, d := range g.Devices {
				model := modelOf(d.Name, r.Nodes, byID)
				if p := m[poolKey{pool: engine.PoolName(r.Pool), model: model}]; p != nil && model != "" {
					p.Reserved += int64(g.Count) * int64(d.Count)
				}
			}
		}
	}
}

// modelOf resolves a device request's name ("gpu", "nvidia/gpu",
// "nvidia/gpu/H200") to the one model of the given nodes it matches
// (engine.DeviceMatches, the engine's rule); "" when none or several do.
func modelOf(name string, nodeIDs []string, byID map[string]*engine.Node) string {
	if strings.Count(name, "/") == 2 {
		return name
	}
	found := ""
	for _, id := range nodeIDs {
		n := byID[id]
		if n == nil {
			continue
		}
		for i := range n.Devices {
			g := &n.Devices[i]
			if !engine.DeviceMatches(name, g) {
				continue
			}
			if found != "" && found != g.ID() {
				return ""
			}
			found = g.ID()
		}
	}
	return found
}

func clamp(v, lo, hi int64) int64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}
