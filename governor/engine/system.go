package engine

import (
	"fmt"
	"math"
	"strconv"

	"github.com/allot-sh/allot/governor/quota"
)

// System and sysbatch jobs run one allocation of each group on every
// eligible node. In a governed namespace they are counted per node
// against the tenant's limits and quota (Config.GovernSystemJobs) or
// refused; either way a direct one never keeps a priority above its
// class, so Nomad's system-scheduler preemption (on by default) cannot
// evict other tenants' work at priority 100 (audit #4).

// wholeNodes returns the nodes whose whole capacity could hold one
// allocation of group g of job j: ready, eligible nodes of its pool. A
// system job runs one allocation on each (Nomad places nothing on the
// others); a job with a group no node can hold never fits.
func (c *capacity) wholeNodes(j *Job, g *Group) []*freeNode {
	key := groupKey(j, g)
	if nodes, ok := c.sys[key]; ok {
		return nodes
	}
	var out []*freeNode
	for _, fn := range c.candidates(j) {
		if c.eligible(fn, j, g) && c.wholeFits(fn.node, g) {
			out = append(out, fn)
		}
	}
	c.sys[key] = out
	return out
}

// wholeFits tells whether an empty node n could hold one allocation of g.
func (c *capacity) wholeFits(n *Node, g *Group) bool {
	if n.CPU < g.CPU || n.MemoryMB < g.MemoryMB || !sane(g) {
		return false
	}
	for _, req := range g.Devices {
		found := false
		for i := range n.Devices {
			d := &n.Devices[i]
			if d.Healthy >= req.Count && DeviceMatches(req.Name, d) && c.m.deviceOK(d, req.Constraints) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// neverFits tells whether job j could not place missing[g] allocations of
// some group even on empty nodes: no node of its pool can hold one (its
// constraints or shape), or all of them together not that many. The room
// of a node is over-estimated (device requests of one allocation may
// share a device group), so a job it calls never-fitting truly is.
func (c *capacity) neverFits(j *Job, missing []int) (string, bool) {
	for gi := range j.Groups {
		if missing[gi] <= 0 {
			continue
		}
		g := &j.Groups[gi]
		nodes := c.wholeNodes(j, g)
		room := 0
		for _, fn := range nodes {
			if room = satAdd(room, wholeRoom(fn.node, g)); room >= missing[gi] {
				break
			}
		}
		if room < missing[gi] {
			return fmt.Sprintf("group %q: at most %d of %d allocations (each %s) fit the %d eligible nodes of the pool even when they are empty",
				g.Name, room, missing[gi], groupShape(g), len(nodes)), true
		}
	}
	return "", false
}

// wholeRoom over-estimates how many allocations of g an empty node n
// holds (n can hold one: wholeFits).
func wholeRoom(n *Node, g *Group) int {
	room := math.MaxInt
	if g.CPU > 0 {
		room = minInt(room, int(n.CPU/g.CPU))
	}
	if g.MemoryMB > 0 {
		room = minInt(room, int(n.MemoryMB/g.MemoryMB))
	}
	for _, req := range g.Devices {
		best := 0
		for i := range n.Devices {
			if d := &n.Devices[i]; req.Count > 0 && DeviceMatches(req.Name, d) {
				best = maxInt(best, d.Healthy/req.Count)
			}
		}
		if req.Count > 0 {
			room = minInt(room, best)
		}
	}
	return room
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// sane tells whether a group's amounts are all non-negative; the
// conversion never produces others, and the engine never places them.
func sane(g *Group) bool {
	if g.CPU < 0 || g.MemoryMB < 0 || g.Count < 0 {
		return false
	}
	for _, d := range g.Devices {
		if d.Count < 0 {
			return false
		}
	}
	return true
}

// fitSystem places one allocation of every group of system job j on each
// of its nodes that has none yet, all or nothing.
func (c *capacity) fitSystem(j *Job, missing []int, key string) fitResult {
	res := fitResult{ok: true, models: quota.Vector{}}
	for gi := range j.Groups {
		if missing[gi] <= 0 {
			continue
		}
		g := &j.Groups[gi]
		have := c.placedOn(j, gi)
		nodes := c.wholeNodes(j, g)
		for _, fn := range nodes {
			if have[fn.node.ID] {
				continue
			}
			tk, ok := c.place(fn, g)
			if !ok {
				c.undo(res.takes)
				res = fitResult{detail: fmt.Sprintf("system job group %q: node %s (one of the %d eligible nodes) has no free capacity for one allocation (%s)",
					g.Name, fn.node.Name, len(nodes), groupShape(g))}
				c.failed[key] = res.detail
				return res
			}
			res.takes = append(res.takes, tk)
			for _, dt := range tk.dev {
				res.models[fn.ids[dt.idx]] += int64(dt.n)
				res.models[fn.node.Devices[dt.idx].Type] += int64(dt.n)
			}
		}
	}
	return res
}

// placedOn returns the nodes where group gi of j has an allocation that
// counts as placed (placementOf).
func (cy *cycle) placedOn(j *Job, gi int) map[string]bool {
	g := &j.Groups[gi]
	out := map[string]bool{}
	for _, a := range cy.byJob[idOf(j)] {
		if a.Group == g.Name && ((a.Live && sameShape(a, g)) || (a.Complete && finishedCounts(j, a))) {
			out[a.NodeID] = true
		}
	}
	return out
}

// holdDirectSystem holds system jobs registered straight to Nomad in
// governed namespaces when system jobs are refused there, or when their
// priority is above their class's (Nomad's system scheduler preempts
// lower priorities to place them). Admission through the queue then sets
// the class's priority.
func (cy *cycle) holdDirectSystem(jobs []*Job) {
	for _, j := range jobs {
		acct := cy.accts[j.Namespace]
		if !j.System || j.State != Direct || acct == nil || cy.pre.requeued[j.Key()] {
			continue
		}
		var reason string
		prio := cy.cfg.Classes[cy.className(j)].Priority
		switch {
		case !cy.cfg.GovernSystemJobs:
			reason = systemRefused().Detail
		case j.Priority > prio:
			reason = "system job registered straight to Nomad at priority " + strconv.Itoa(j.Priority) +
				", above its class " + cy.className(j) + " (" + strconv.Itoa(prio) + "): held until admitted at its class's priority"
		default:
			continue
		}
		cy.held[j.Key()] = true
		for _, a := range cy.byJob[idOf(j)] {
			if a.Live {
				acct.sub(allocVector(a))
			}
		}
		cy.decide(j, Hold, reason)
		v := cy.verdict(j)
		v.State, v.Reason, v.Checks = Queued, reason, []Check{{Name: "type", Detail: reason}}
	}
}

// systemRefused is the failing check of a system job in a governed
// namespace when the governor's config refuses them.
func systemRefused() Check {
	return Check{Name: "type", Permanent: true, Detail: `system and sysbatch jobs are not admitted in governed namespaces (governor config system_jobs = "refuse"); run them in a namespace without allot.* meta`}
}
