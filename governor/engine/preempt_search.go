package engine

import (
	"time"

	"github.com/allot-sh/allot/governor/quota"
)

// exactSearchMax is the largest candidate count searched exhaustively for
// the fewest victims; larger sets use a greedy prefix and a minimising
// pass.
const exactSearchMax = 8

// trial simulates admitting one queued job after stopping a set of victims
// (and the allocations Nomad is already stopping). It leaves the cycle's
// usage and capacity exactly as it found them.
type trial struct {
	cy      *cycle
	j       *Job
	acct    *account
	missing []int
	req     quota.Vector
	// devs holds the device resources (types, models) req needs.
	devs map[string]bool
	// fair, when set, is the fairness rule the victims were chosen by
	// (fairpreempt.go).
	fair *fairPreemption
	// move: the victims are moved, not taken (move.go); movedTo holds
	// the nodes the head's last fitsMoved placed it on.
	move    bool
	movedTo []string
	// unsaved counts the borrowers' jobs a reclaim spared because they
	// would lose more than its rules allow (reclaimable).
	unsaved int
}

func (cy *cycle) newTrial(j *Job, acct *account) *trial {
	missing := cy.missing(j)
	s := &trial{cy: cy, j: j, acct: acct, missing: missing, req: requestVector(j, missing), devs: map[string]bool{}}
	for r, n := range s.req {
		if n > 0 && r != quota.CPU && r != quota.Memory {
			s.devs[r] = true
		}
	}
	return s
}

// relevant reports whether stopping v can help: it holds a device j
// needs, or j needs no device.
func (s *trial) relevant(v *victim) bool {
	if len(s.devs) == 0 {
		return true
	}
	for r := range s.devs {
		if v.use[r] > 0 {
			return true
		}
	}
	return false
}

// addStopping records allocations Nomad is stopping: live ones of held
// or stopped jobs (their usage is still counted) and those Nomad already
// marked to stop (Alloc.Stopping: capacity only).
func (cy *cycle) addStopping(allocs []*Alloc) {
	ps := &cy.pre
	if ps.stoppingUse == nil {
		ps.stoppingUse = map[*account]quota.Vector{}
	}
	for _, a := range allocs {
		ps.stopping = append(ps.stopping, a)
		if acct := cy.accts[a.Namespace]; acct != nil && a.Live {
			if ps.stoppingUse[acct] == nil {
				ps.stoppingUse[acct] = quota.Vector{}
			}
			ps.stoppingUse[acct].Add(allocVector(a))
		}
	}
}

// feasible reports whether j passes its limit, quota and fit checks once
// the victims in set and the stopping allocations are gone.
func (s *trial) feasible(set []*victim) bool {
	cy := s.cy
	s.release(set, 1)
	failed, cursor := cy.cap.failed, cy.cap.cursor
	cy.cap.failed, cy.cap.cursor = map[string]string{}, map[string]int{}
	ok := s.acct.withinLimit(s.req) && s.acct.withinQuota(s.req)
	if ok {
		fit := cy.cap.fitKeyed(s.j, s.missing, "\x00sim")
		if ok = fit.ok; ok {
			cy.cap.undo(fit.takes)
		}
	}
	cy.cap.failed, cy.cap.cursor = failed, cursor
	s.release(set, -1)
	return ok
}

// release frees (sign 1) or takes back (sign -1) the usage and capacity
// of the victims and the stopping allocations.
func (s *trial) release(set []*victim, sign int64) {
	cy := s.cy
	for acct, use := range cy.pre.stoppingUse {
		shiftUsage(acct, use, sign)
	}
	for _, a := range cy.pre.stopping {
		cy.cap.shift(a, sign)
	}
	for _, v := range set {
		shiftUsage(v.acct, v.use, sign)
		for _, a := range v.allocs {
			cy.cap.shift(a, sign)
		}
	}
}

func shiftUsage(acct *account, use quota.Vector, sign int64) {
	if sign > 0 {
		acct.sub(use)
	} else {
		acct.add(use)
	}
}

// shift frees (sign 1) or re-occupies (sign -1) the resources a live or
// stopping allocation holds on its node.
func (c *capacity) shift(a *Alloc, sign int64) {
	fn := c.byID[a.NodeID]
	if fn == nil || !a.holds() {
		return
	}
	fn.cpu += sign * a.CPU
	fn.mem += sign * a.MemoryMB
	for i, id := range fn.ids {
		if n := a.Devices[id]; n > 0 {
			fn.dev[i] += int(sign) * n
		}
	}
}

// choose returns the fewest, cheapest victims that let the job run, nil
// when even all candidates do not. Candidates come cheapest first.
func choose(s *trial, cands []*victim) []*victim {
	if len(cands) == 0 || !s.feasible(cands) {
		return nil
	}
	if len(cands) <= exactSearchMax {
		return exact(s, cands)
	}
	return greedy(s, cands)
}

// exact searches every subset of cands: the fewest victims, and among
// those the cheapest. When those lose more than FairLostWork (a reclaim
// taking victims without a fresh checkpoint), a larger set is taken
// instead where it stops no more such victims, no higher class, and
// throws away less device time: fewest first took, for a 16-GPU
// reclaim, one 64-GPU job 52 hours past its start that never
// checkpointed (3,357 device-hours) over two 8-GPU jobs that lost 14
// (docs/simulator.md, round 24). cands together must make room (choose
// checks it), so the search always finds a set.
func exact(s *trial, cands []*victim) []*victim {
	var best []*victim
	var bestCost setCost
	for k := 1; k <= len(cands); k++ {
		set := cheapestFeasible(s, cands, k)
		if set == nil {
			continue
		}
		c := costOf(set)
		if best == nil {
			if c.stale == 0 {
				return set
			}
			best, bestCost = set, c
			continue
		}
		if c.stale <= bestCost.stale && c.prio <= bestCost.prio && c.lost < bestCost.lost {
			best, bestCost = set, c
		}
	}
	return best
}

// setCost ranks victim sets of equal size: the fewest victims that lose
// more than FairLostWork (only a reclaim takes such victims: freshFirst),
// then the highest class stopped, then the total device time lost.
type setCost struct {
	stale int
	prio  int
	lost  time.Duration
}

func costOf(set []*victim) setCost {
	var c setCost
	for _, v := range set {
		if v.lost > FairLostWork {
			c.stale++
		}
		if v.prio > c.prio {
			c.prio = v.prio
		}
		c.lost += v.cost
	}
	return c
}

func (c setCost) less(o setCost) bool {
	switch {
	case c.stale != o.stale:
		return c.stale < o.stale
	case c.prio != o.prio:
		return c.prio < o.prio
	}
	return c.lost < o.lost
}

// cheapestFeasible tries every k-subset of cands and returns the
// cheapest that makes room (ties: the first in the candidates' order).
func cheapestFeasible(s *trial, cands []*victim, k int) []*victim {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	set := make([]*victim, k)
	var best []*victim
	var bestCost setCost
	for {
		for i, x := range idx {
			set[i] = cands[x]
		}
		if c := costOf(set); (best == nil || c.less(bestCost)) && s.feasible(set) {
			best, bestCost = append([]*victim(nil), set...), c
		}
		i := k - 1
		for i >= 0 && idx[i] == len(cands)-k+i {
			i--
		}
		if i < 0 {
			return best
		}
		idx[i]++
		for m := i + 1; m < k; m++ {
			idx[m] = idx[m-1] + 1
		}
	}
}

// greedy finds the shortest feasible prefix of cands by bisection (more
// victims never make room scarcer), then drops every victim, most
// expensive first, that the others do not need.
func greedy(s *trial, cands []*victim) []*victim {
	lo, hi := 1, len(cands)
	for lo < hi {
		mid := (lo + hi) / 2
		if s.feasible(cands[:mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	set := append([]*victim(nil), cands[:lo]...)
	for i := len(set) - 2; i >= 0; i-- {
		without := append(append([]*victim(nil), set[:i]...), set[i+1:]...)
		if s.feasible(without) {
			set = without
		}
	}
	return set
}
