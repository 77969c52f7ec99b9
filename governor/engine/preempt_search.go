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
	// claim: j's tenant stays within its nominal quota with it, so its
	// preemption is a reclaim (candidates).
	claim bool
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
	_, ok := s.placeWithout(set, true)
	return ok
}

// placeWithout places j as if the victims in set and the stopping
// allocations were gone and then undoes it: the takes say where it
// would go; ok tells whether it fits (and, with checkQuota, passes its limit
// and quota checks first). The capacity is left as it was.
func (s *trial) placeWithout(set []*victim, checkQuota bool) (fit fitResult, ok bool) {
	cy := s.cy
	s.release(set, 1)
	defer s.release(set, -1)
	if checkQuota && !(s.acct.withinLimit(s.req) && s.acct.withinQuota(s.req)) {
		return fitResult{}, false
	}
	failed, cursor := cy.cap.failed, cy.cap.cursor
	cy.cap.failed, cy.cap.cursor = map[string]string{}, map[string]int{}
	fit = cy.cap.fitKeyed(s.j, s.missing, "\x00sim")
	if fit.ok {
		cy.cap.undo(fit.takes)
	}
	cy.cap.failed, cy.cap.cursor = failed, cursor
	return fit, fit.ok
}

// reserveFree takes out of the cycle's free capacity what j's placement
// needs beyond what set and the stopping allocations free: the free
// capacity a preemptor counts on is its own for the rest of the plan, as
// its victims' is (and, while it waits for them to stop, tryPreempt
// reserves it the same way). Without it a later job of the walk took it
// (another preemptor's trial counted it too), and the preemptor, its
// victims stopped, did not fit in the next cycle (docs/simulator.md,
// round 48).
func (s *trial) reserveFree(set []*victim) {
	if fit, ok := s.placeWithout(set, false); ok {
		s.cy.cap.reserve(fit.takes)
	}
}

// reserve takes from the free capacity the part of takes (a placement
// made with capacity that was released for it, then undone) that is
// free now.
func (c *capacity) reserve(takes []take) {
	for _, tk := range takes {
		fn := tk.fn
		fn.cpu -= clampFree(tk.cpu, fn.cpu)
		fn.mem -= clampFree(tk.mem, fn.mem)
		for _, d := range tk.dev {
			fn.addDev(d.idx, -int(clampFree(int64(d.n), int64(fn.dev[d.idx]))))
		}
	}
}

// clampFree is the part of want that free holds (none when free is not
// positive).
func clampFree(want, free int64) int64 {
	switch {
	case free <= 0:
		return 0
	case want < free:
		return want
	}
	return free
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
			fn.addDev(i, int(sign)*n)
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
// (docs/simulator.md, round 24). Under the entitlement rule a larger set
// is also taken where it stops no more such victims and takes less of
// its victims' tenants' nominal quota without throwing away more work
// for good (setCost.takesLess). cands together must make room (choose
// checks it), so the search always finds a set.
func exact(s *trial, cands []*victim) []*victim {
	var best []*victim
	var bestCost setCost
	for k := 1; k <= len(cands); k++ {
		set := cheapestFeasible(s, cands, k)
		if set == nil {
			continue
		}
		c := s.costOf(set)
		if best == nil {
			if c.stale == 0 && c.nominal == 0 {
				return set
			}
			best, bestCost = set, c
			continue
		}
		if c.betterLarger(bestCost) {
			best, bestCost = set, c
		}
	}
	return best
}

// setCost ranks victim sets of equal size: the fewest victims that lose
// more than FairLostWork (only a reclaim takes such victims: freshFirst),
// then, under the entitlement rule, the least taken of the victims'
// tenants' nominal quota where it throws away no more work for good
// (takesLess), then the highest class stopped, then the total device
// time lost.
type setCost struct {
	stale int
	// nominal is what the set takes, of the governed devices, from
	// victims' tenants (the preemptor's own aside) below their nominal
	// quota: capacity they were promised, not capacity they borrow.
	// Counted where the entitlement rule judges the set (trial.ranksNominal).
	nominal int64
	prio    int
	lost    time.Duration
	// thrown is the device time the set throws away for good: lost, less
	// the victims whose stop saves a checkpoint (Group.SavesOnStop). The
	// nominal ranking never costs more of it.
	thrown time.Duration
}

// costOf is the cost of stopping set for the trial's job.
func (s *trial) costOf(set []*victim) setCost {
	var c setCost
	for _, v := range set {
		if v.lost > FairLostWork {
			c.stale++
		}
		if v.prio > c.prio {
			c.prio = v.prio
		}
		c.lost += v.cost
		c.thrown += v.thrown
	}
	if s.ranksNominal(set) {
		c.nominal = s.nominalTaken(set)
	}
	return c
}

func (c setCost) less(o setCost) bool {
	switch {
	case c.stale != o.stale:
		return c.stale < o.stale
	case c.takesLess(o):
		return true
	case o.takesLess(c):
		return false
	case c.prio != o.prio:
		return c.prio < o.prio
	}
	return c.lost < o.lost
}

// takesLess reports whether c takes less of its victims' tenants'
// nominal quota than o and throws away no more work for good: a stop
// that saves a checkpoint loses nothing, so taking more such victims to
// spare a promise costs only restarts, while taking more victims that
// lose their work since their last checkpoint threw away 1,196 GPU-hours
// a week more (docs/simulator.md, round 31).
func (c setCost) takesLess(o setCost) bool {
	return c.nominal < o.nominal && c.thrown <= o.thrown
}

// betterLarger reports whether a larger set of cost c replaces the best
// smaller set of cost o (exact). Where c throws away no more work for
// good and either set takes nominal quota, it must stop fewer victims
// that lose more than FairLostWork, or as many and take less nominal
// quota; otherwise (and at equal nominal) it must stop no more such
// victims, take no more nominal quota, stop no higher class and throw
// away less device time.
func (c setCost) betterLarger(o setCost) bool {
	if c.thrown <= o.thrown && (c.nominal != 0 || o.nominal != 0) {
		switch {
		case c.stale != o.stale:
			return c.stale < o.stale
		case c.nominal != o.nominal:
			return c.nominal < o.nominal
		}
	}
	return c.stale <= o.stale && c.nominal <= o.nominal && c.prio <= o.prio && c.lost < o.lost
}

// nominalTaken sums, per victim tenant other than the preemptor's, how
// far the set's victims take it below its nominal quota of each governed
// device (at most what it loses): a reclaim or fair-share preemption
// takes back what borrowers borrow, and a whole gang of a tenant that
// borrows a few devices of it throws the rest of that tenant's promise
// away (docs/simulator.md, round 31: research's 64-GPU gang, 13 GPUs
// past its nominal, preempted 9 times).
func (s *trial) nominalTaken(set []*victim) int64 {
	var taken int64
	for i, v := range set {
		if v.acct == s.acct || tenantSeen(set[:i], v.acct) {
			continue
		}
		for r := range s.devs {
			if v.acct.cohort.governed[r] {
				taken += belowNominal(v.acct, r, set[i:])
			}
		}
	}
	return taken
}

// tenantSeen reports whether a victim of set belongs to a.
func tenantSeen(set []*victim, a *account) bool {
	for _, v := range set {
		if v.acct == a {
			return true
		}
	}
	return false
}

// belowNominal is how far stopping a's victims in set takes a below its
// nominal quota of r, at most what they hold of it. It allocates
// nothing: the exhaustive search calls it for every candidate set.
func belowNominal(a *account, r string, set []*victim) int64 {
	var n int64
	for _, v := range set {
		if v.acct == a {
			n += v.use[r]
		}
	}
	if n <= 0 {
		return 0
	}
	if below := a.t.Quota[r] - (a.usage[r] - n); below > 0 {
		return min64(below, n)
	}
	return 0
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
		if c := s.costOf(set); (best == nil || c.less(bestCost)) && s.feasible(set) {
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
// expensive first, that the others do not need. Under the entitlement
// rule it searches with the victims that take nominal quota last
// (nominalLast) and takes that set unless it throws away more work for
// good.
func greedy(s *trial, cands []*victim) []*victim {
	set := greedyPrefix(s, cands)
	if !byEntitlement(s.cy.cfg.FairShareRule, true) {
		return set
	}
	if alt := greedyPrefix(s, s.nominalLast(cands)); s.ranksNominal(alt) && thrownBy(alt) <= thrownBy(set) {
		return alt
	}
	return set
}

// ranksNominal reports whether set is ranked by the nominal quota it
// takes (setCost.nominal): where the entitlement rule judges its
// victims (byEntitlement), every one of them counted.
func (s *trial) ranksNominal(set []*victim) bool {
	return byEntitlement(s.cy.cfg.FairShareRule, othersStopCheaply(nil, set))
}

// thrownBy sums the device time set throws away for good (setCost.thrown)
// without the rest of its cost.
func thrownBy(set []*victim) time.Duration {
	var t time.Duration
	for _, v := range set {
		t += v.thrown
	}
	return t
}

// greedyPrefix is greedy's search over cands in their order.
func greedyPrefix(s *trial, cands []*victim) []*victim {
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

// nominalLast returns cands with the victims that alone take some of
// their tenant's nominal quota (nominalTaken) moved behind the others,
// each group in its order: greedy's prefix then takes borrowed capacity
// first, as exact's ranking does.
func (s *trial) nominalLast(cands []*victim) []*victim {
	out := make([]*victim, 0, len(cands))
	var later []*victim
	for _, v := range cands {
		if s.nominalTaken([]*victim{v}) > 0 {
			later = append(later, v)
			continue
		}
		out = append(out, v)
	}
	return append(out, later...)
}
