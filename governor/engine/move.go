package engine

import (
	"sort"
	"time"
)

// Moves (issue 14): a pool's starving head that fails only its fit often
// waits hours for its reserved nodes to drain, while the pool's free
// devices, scattered over partly used nodes, already add up to what it
// needs. The simulator measured it: a queued gang no larger than the
// free GPUs waited during about 60 % of the standard scenario's span
// under contention, beside 5-6 % of all GPU-hours free. A move requeues
// checkpointed jobs off a few nodes so the head fits there now, when
// every moved job fits the free capacity left elsewhere at once: the
// same jobs run again, each losing at most FairLostWork, and the drain's
// idle capacity runs the head instead.
//
// A move takes only jobs that are no victims of a higher class than the
// head and lose at most FairLostWork, or that stop cheaply whatever their
// class (they save a checkpoint when stopped or lose at most
// FairCheapLoss: movable); that ran at least MoveMinRun, were not requeued
// within MoveCooldown (a job is never moved back and forth), are no
// dispatched children
// (those are stopped, not requeued) and whose allocations all lie in the
// head's node pool; it moves no more devices than the head starts, and
// only when the head's reservation is unknown or starts MoveMinGain or
// more from now (a drain about to end is cheaper than a restart).
const (
	// CauseMove is the cause of a preemption that moves jobs to other
	// nodes so a starving head fits.
	CauseMove = "move"
	// MoveMinRun is how long a job runs before a move may take it
	// (Config.MoveMinRun overrides it).
	MoveMinRun = 10 * time.Minute
	// MoveCooldown is how long after a requeue a job may not be moved.
	MoveCooldown = time.Hour
	// MoveMinGain is the shortest wait for a reservation that a move
	// shortens.
	MoveMinGain = 15 * time.Minute
)

// tryMove looks for a move that lets starving head j (failing only
// fit) run now; nil when there is none. The nodes the head goes to are
// closed to the rest of the cycle's walk: a later job must not take the
// free devices beside the moved jobs that the head counts on.
func (cy *cycle) tryMove(j *Job, s *trial) []*victim {
	r := cy.reserved[j.Pool()]
	if r == nil || r.head != j || (!r.Start.IsZero() && r.Start.Sub(cy.s.Now) < MoveMinGain) {
		return nil
	}
	cands := cy.moveCandidates(j, s)
	if len(cands) == 0 || !s.fitsMoved(cands, false) {
		return nil
	}
	// Releasing more only adds capacity: the shortest prefix that lets
	// the head fit, then every victim the others do not need dropped.
	lo, hi := 1, len(cands)
	for lo < hi {
		mid := (lo + hi) / 2
		if s.fitsMoved(cands[:mid], false) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	set := append([]*victim(nil), cands[:lo]...)
	for i := len(set) - 1; i >= 0 && len(set) > 1; i-- {
		without := append(append([]*victim(nil), set[:i]...), set[i+1:]...)
		if s.fitsMoved(without, false) {
			set = without
		}
	}
	if moved(set, s) > s.deviceCount() || !s.fitsMoved(set, true) {
		return nil
	}
	if cy.cap.closed == nil {
		cy.cap.closed = map[string]bool{}
	}
	for _, id := range s.movedTo {
		cy.cap.closed[id] = true
	}
	cy.noteMoveHold(j, s.movedTo)
	return set
}

// moveCandidates returns the jobs a move for j may take, those on the
// least used nodes first (few victims free a whole node), then cheapest.
func (cy *cycle) moveCandidates(j *Job, s *trial) []*victim {
	prio := cy.cfg.Classes[cy.className(j)].Priority
	pool := map[string]*freeNode{}
	for _, fn := range cy.cap.candidates(j) {
		pool[fn.node.ID] = fn
	}
	used := func(fn *freeNode) int {
		n := 0
		for i := range fn.node.Devices {
			if s.devs[fn.node.Devices[i].Type] || s.devs[fn.ids[i]] {
				n += fn.node.Devices[i].Healthy - fn.dev[i]
			}
		}
		return n
	}
	load := map[*victim]int{}
	var out []*victim
	for _, v := range cy.pre.pool {
		if !cy.movable(j, v, prio, s) {
			continue
		}
		worst, inPool := 0, true
		for _, a := range v.allocs {
			fn := pool[a.NodeID]
			if fn == nil {
				inPool = false
				break
			}
			worst = maxInt(worst, used(fn))
		}
		if inPool {
			load[v] = worst
			out = append(out, v)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if load[out[a]] != load[out[b]] {
			return load[out[a]] < load[out[b]]
		}
		return victimLess(out[a], out[b])
	})
	return out
}

// movable reports whether victim v may be moved for head j of class
// priority prio. A job that stops cheaply (victim.stopsCheaply: it saves
// a checkpoint when stopped, its device tasks under the ckpt driver, or
// checkpointed or started within FairCheapLoss) is moved whatever its
// class: it loses little or no work and runs again at once elsewhere
// (fitsMoved), where a fragment would otherwise idle beside a waiting
// gang (docs/simulator.md, rounds 34 and 50), as a starving head's
// fair-share victims are taken whatever their class.
func (cy *cycle) movable(j *Job, v *victim, prio int, s *trial) bool {
	now := cy.s.Now
	spared := v.stopsCheaply() || v.prio <= prio && v.lost <= FairLostWork
	return v.j != j && !cy.pre.requeued[v.key] && spared &&
		now.Sub(v.newest) >= cy.cfg.moveMinRun() && (v.j.RequeuedAt.IsZero() || now.Sub(v.j.RequeuedAt) >= MoveCooldown) &&
		!v.j.Dispatched && !preemptedBy(j, v.key) && s.relevant(v)
}

// moveMinRun is Config.MoveMinRun, MoveMinRun when unset.
func (c Config) moveMinRun() time.Duration {
	if c.MoveMinRun > 0 {
		return c.MoveMinRun
	}
	return MoveMinRun
}

// moved counts the devices of the types the head needs that set holds.
func moved(set []*victim, s *trial) int64 {
	var n int64
	for _, v := range set {
		for r := range s.devs {
			if !isModel(r) {
				n += v.use[r]
			}
		}
	}
	return n
}

// deviceCount is how many devices (by type) the head asks for.
func (s *trial) deviceCount() int64 {
	var n int64
	for r := range s.devs {
		if !isModel(r) {
			n += s.req[r]
		}
	}
	return n
}

// isModel tells a "vendor/type/model" resource from a device type.
func isModel(r string) bool {
	slashes := 0
	for _, c := range r {
		if c == '/' {
			slashes++
		}
	}
	return slashes == 2
}

// fitsMoved reports whether the head fits once the victims in set (and
// the allocations Nomad is stopping) are gone and, with refit, whether
// every victim then fits the capacity left, as it will be admitted again
// (without its placement pin). It leaves the capacity as it found it.
func (s *trial) fitsMoved(set []*victim, refit bool) bool {
	cy := s.cy
	for _, a := range cy.pre.stopping {
		cy.cap.shift(a, 1)
	}
	for _, v := range set {
		for _, a := range v.allocs {
			cy.cap.shift(a, 1)
		}
	}
	failed, cursor := cy.cap.failed, cy.cap.cursor
	cy.cap.failed, cy.cap.cursor = map[string]string{}, map[string]int{}
	var takes []take
	fit := cy.cap.fitKeyed(s.j, s.missing, "\x00move")
	ok := fit.ok
	takes = append(takes, fit.takes...)
	s.movedTo = s.movedTo[:0]
	for _, tk := range fit.takes {
		if !containsString(s.movedTo, tk.fn.node.ID) {
			s.movedTo = append(s.movedTo, tk.fn.node.ID)
		}
	}
	for i := 0; ok && refit && i < len(set); i++ {
		vj, missing := unpinned(set[i])
		f := cy.cap.fitKeyed(vj, missing, "\x00moved"+set[i].key)
		ok = f.ok
		takes = append(takes, f.takes...)
	}
	cy.cap.undo(takes)
	cy.cap.failed, cy.cap.cursor = failed, cursor
	for _, v := range set {
		for _, a := range v.allocs {
			cy.cap.shift(a, -1)
		}
	}
	for _, a := range cy.pre.stopping {
		cy.cap.shift(a, -1)
	}
	return ok
}

// unpinned returns a copy of victim v's job without the governor's
// placement pin, and how many allocations of each group it runs: what
// its admission after the move places.
func unpinned(v *victim) (*Job, []int) {
	cp := *v.j
	cp.Groups = make([]Group, len(v.j.Groups))
	missing := make([]int, len(v.j.Groups))
	for i, g := range v.j.Groups {
		cp.Groups[i] = g
		if v.j.Pinned {
			cp.Groups[i].Constraints = withoutPin(g.Constraints)
		}
		for _, a := range v.allocs {
			if a.Group == g.Name {
				missing[i]++
			}
		}
	}
	return &cp, missing
}

// withoutPin drops the node-ID set constraints a pin writes.
func withoutPin(cs []Constraint) []Constraint {
	var out []Constraint
	for _, c := range cs {
		if c.LTarget == "${node.unique.id}" && c.Operand == "set_contains_any" {
			continue
		}
		out = append(out, c)
	}
	return out
}
