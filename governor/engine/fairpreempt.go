package engine

import (
	"math"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/quota"
)

// Fairness preemption (issue 14): a queued job of a tenant that borrows
// (it would exceed its nominal quota, so reclaim does not apply) may
// preempt jobs of cohort tenants that borrow more, measured by the
// weighted dominant share the queue orders by, when
//
//   - the victim's tenant keeps a share at least Config.FairShareGap
//     (default FairShareGap) above the preemptor's tenant's share after
//     the admission (hysteresis: the two can never swap places by
//     preempting each other back, so it never churns);
//   - the victim loses at most FairLostWork of work (a fresh checkpoint,
//     or a start that recent): fairness costs next to no useful work;
//   - the victim's class is not above the preemptor's (Config.FairClasses
//     FairClassesAny: any preemptible class), unless the
//     preemptor is its cohort's starved head (borrowhold.go): a tenant
//     below HoldShareMax of its nominal takes back lent capacity whatever
//     the borrower's class, as reclaim does, its gang merely being
//     larger than what is left of its nominal. Measured on the
//     simulator's grid (docs/simulator.md, round 7): a starved head is
//     mostly a low-class gang, and the borrowers that hold the lending
//     mostly run standard jobs, so with the class rule it waited for
//     drains of many hours (recsys at 0.78 of its entitlement).
const (
	FairShareGap = 0.1
	FairLostWork = 30 * time.Minute
	// FairMinRun: a job that started less than this ago (say, the
	// preemptor of a preemption that just ran) is no fairness victim
	// (Config.FairMinRun overrides it).
	FairMinRun = 2 * time.Minute
	// FairCheapLoss: under FairRuleAuto a victim that loses at most this
	// much work (it checkpointed or started that recently) is judged, as
	// one that saves on stop is, by the entitlement rule, of any class
	// (victim.stopsCheaply), but only by a move that keeps both sides
	// within their entitlements (entitlement.within). Measured on the
	// simulator's contention weeks with the default stop model
	// (docs/simulator.md, rounds 38 and 39): every target on 7 of the 18
	// standard weeks instead of 4, share error 0.006 lower, net useful
	// allocation unchanged; without the bound, with 32 tenants, a victim's
	// tenant carried below its entitlement took from a third in turn,
	// tripling the preemptions and costing 4–6 points a week.
	FairCheapLoss = 5 * time.Minute
	// FairCrossLoss: under FairRuleAuto a move whose victims of other
	// tenants each lose at most this much work (they checkpointed or
	// started within it) or save a checkpoint when stopped is held to
	// entitlement.lowers alone, as FairRuleEntitlement holds every move:
	// either side may end past its entitlement (victim.justSaved).
	// Measured with ClassLostWork on the simulator's contention weeks
	// (docs/simulator.md, round 44): every target on 8 of the 18 standard
	// weeks instead of 7, and on 8 instead of 6 where stops take 2
	// minutes; alone it cost 0.5 points of net useful allocation a week
	// where stops take 2 minutes, in the stops of the extra preemptions
	// (round 43).
	FairCrossLoss = time.Minute
)

// Which classes a fairness preemption may take (Config.FairClasses;
// governor config fair_share_classes).
const (
	// FairClassesNotAbove (the default): victims of a class no higher
	// than the preemptor's.
	FairClassesNotAbove = "not-above"
	// FairClassesAny: victims of any preemptible class, as a reclaim
	// takes them: borrowed capacity is evened out whatever the class of
	// the jobs that run on it (measured in docs/simulator.md, round 20:
	// it pays where jobs checkpoint on stop).
	FairClassesAny = "any"
)

// CauseFairShare is the cause of a preemption that evens out borrowed
// capacity between tenants above their nominal quota.
const CauseFairShare = "fair-share"

// fairPreemption describes whether and from whom queued job j may take
// capacity for fairness; nil when it may not.
type fairPreemption struct {
	acct    *account
	lostTo  map[string]bool
	now     time.Time
	prio    int
	after   float64 // the preemptor's tenant's share after admitting j
	cluster quota.Vector
	minRun  time.Duration
	// gap is Config.FairShareGap; anyClass tells whether victims of a
	// class above the preemptor's qualify (Config.FairClasses).
	gap      float64
	anyClass bool
	// head: the preemptor is its cohort's starved head (borrowhold.go):
	// victims' tenants need only keep their nominal quota after losing
	// them, not a share above the preemptor's, and victims of any class
	// qualify.
	head bool
	// ent is the cohort's entitlement under Config.FairShareRule
	// FairRuleEntitlement (nil under the gap rule); below tells whether
	// the preemptor's tenant uses less than its entitlement of what it
	// asks for: else no set lowers the distance (entitlement.lowers), so
	// no victim is searched for.
	ent   entitlement
	below bool
	req   quota.Vector
	// rule is Config.FairShareRule: under FairRuleAuto a victim whose
	// stop costs little (victim.stopsCheaply) is judged by the
	// entitlement rule and may be of any class; any other victim by the
	// gap rule and the class rule (byEntitlement).
	rule string
}

// newFairPreemption returns the fairness rule for a preemptor of tenant
// acct needing req at class priority prio.
func (cy *cycle) newFairPreemption(acct *account, req quota.Vector, prio int) *fairPreemption {
	cluster := cy.clusterVector()
	after := shareOf(acct, cluster, req, 1)
	if math.IsInf(after, 0) || math.IsNaN(after) {
		return nil
	}
	f := &fairPreemption{acct: acct, lostTo: cy.lostTo(acct.t.Namespace), now: cy.s.Now, prio: prio, after: after, cluster: cluster,
		minRun: cy.cfg.fairMinRun(), gap: cy.cfg.fairShareGap(), anyClass: cy.cfg.FairClasses == FairClassesAny, req: req}
	f.rule = cy.cfg.FairShareRule
	if byEntitlement(f.rule, true) {
		f.ent = cy.entitlementOf(acct.cohort)
		f.below = f.ent.below(acct, req)
	}
	return f
}

// victim reports whether v may be preempted for fairness on its own.
// Capacity does not go back and forth: a tenant never takes back from a
// tenant whose preemptions requeued its jobs within reclaimWindow, a job
// that started within Config.FairMinRun is no fairness victim, nor is
// one requeued within reclaimWindow (admitted again at once, it would
// otherwise be stopped twice within minutes: fairness never churns one
// job; a reclaim still may take it).
func (f *fairPreemption) victim(v *victim, req quota.Vector) bool {
	anyClass := f.anyClass || (f.rule == FairRuleAuto && v.stopsCheaply())
	if v.acct == f.acct || (v.prio > f.prio && !f.head && !anyClass) || v.lost > FairLostWork || !v.acct.aboveNominal(req) ||
		f.lostTo[v.acct.t.Namespace] || f.now.Sub(v.newest) < f.minRun || requeuedWithin(v.j, f.now, reclaimWindow) {
		return false
	}
	switch {
	case f.head:
		return v.acct.keepsNominal(v.use)
	case f.judges(v.stopsCheaply()):
		return f.below && f.ent.above(v.acct, v.use)
	}
	return shareOf(v.acct, f.cluster, v.use, -1) >= f.after+f.gap
}

// requeuedWithin reports whether j was requeued within d before now.
func requeuedWithin(j *Job, now time.Time, d time.Duration) bool {
	return !j.RequeuedAt.IsZero() && now.Sub(j.RequeuedAt) <= d
}

// fairShareGap is Config.FairShareGap, FairShareGap when unset.
func (c Config) fairShareGap() float64 {
	if c.FairShareGap > 0 {
		return c.FairShareGap
	}
	return FairShareGap
}

// fairMinRun is Config.FairMinRun, FairMinRun when unset.
func (c Config) fairMinRun() time.Duration {
	if c.FairMinRun > 0 {
		return c.FairMinRun
	}
	return FairMinRun
}

// keepsNominal reports whether the tenant still uses at least its
// nominal quota of every governed resource after losing use.
func (a *account) keepsNominal(use quota.Vector) bool {
	for r, n := range use {
		if n > 0 && a.cohort.governed[r] && a.usage[r]-n < a.t.Quota[r] {
			return false
		}
	}
	return true
}

// lostTo returns the tenants whose preemptions requeued jobs of tenant ns
// within reclaimWindow (the jobs' allot.preempted-by and requeued-at, and
// what the previous plan carried over: taken.go).
func (cy *cycle) lostTo(ns string) map[string]bool {
	if cy.pre.lostTo == nil {
		cy.pre.lostTo = map[string]map[string]bool{}
		for _, j := range cy.jobs {
			if j.PreemptedBy == "" || !requeuedWithin(j, cy.s.Now, reclaimWindow) {
				continue
			}
			keys := strings.Fields(j.PreemptedBy)
			by, _, _ := strings.Cut(keys[len(keys)-1], "/")
			markPair(cy.pre.lostTo, j.Namespace, by)
		}
		for victim, bys := range cy.carriedTaken() {
			for by := range bys {
				markPair(cy.pre.lostTo, victim, by)
			}
		}
	}
	return cy.pre.lostTo[ns]
}

// noteLost records that tenant by's preemption (any but a move: the
// moved jobs' tenant keeps its capacity) takes capacity of tenant ns in
// this cycle: within the cycle too, ns does not take it back, for
// fairness (lostTo) nor by a reclaim (planLost). Without it one plan
// could stop jobs of each tenant for the other: a starved head's take
// followed by the gap rule's take back, a fair-share take or a reclaim
// that leaves its victims' tenant below its nominal quota followed by
// that tenant's reclaim (TestPropertyNoPlanTakesBothWays; the
// simulator had 21 such plans on three standard weeks). A
// reclaim still takes back in a later cycle: the nominal quota is
// promised.
func (cy *cycle) noteLost(ns, by string) {
	cy.lostTo(ns) // built from the snapshot first
	cy.pre.lostTo = markPair(cy.pre.lostTo, ns, by)
	cy.pre.planLost = markPair(cy.pre.planLost, ns, by)
}

// markPair sets m[ns][by], making the maps it needs; it returns m.
func markPair(m map[string]map[string]bool, ns, by string) map[string]map[string]bool {
	if m == nil {
		m = map[string]map[string]bool{}
	}
	if m[ns] == nil {
		m[ns] = map[string]bool{}
	}
	m[ns][by] = true
	return m
}

// allows reports whether a whole victim set keeps every victim tenant's
// share, after losing all its victims of the set, the gap above the
// preemptor's; under FairRuleEntitlement, whether the set brings usage
// closer to the entitlement.
func (f *fairPreemption) allows(set []*victim) bool {
	// The tenant's own lower-class jobs are no fairness victims: a set of
	// only those moves nothing between tenants, under either rule.
	if !f.takesFromOthers(set) {
		return true
	}
	if f.byEntitlement(set) {
		return f.below && f.ent.lowers(f.acct, f.req, set, f.cluster) && (!f.boundsCheapMoves() || f.ent.within(f.acct, f.req, set))
	}
	for a, use := range othersLose(f.acct, set) {
		if f.head {
			if !a.keepsNominal(use) {
				return false
			}
			continue
		}
		if shareOf(a, f.cluster, use, -1) < f.after+f.gap {
			return false
		}
	}
	return true
}

// byEntitlement reports whether set is judged by the entitlement rule:
// under FairRuleEntitlement, and under FairRuleAuto when the stop of
// every victim of another tenant costs little (victim.stopsCheaply);
// never for a starved head.
func (f *fairPreemption) byEntitlement(set []*victim) bool {
	return f.judges(othersStopCheaply(f.acct, set))
}

// judges reports whether victims whose stop costs little or not (cheap,
// victim.stopsCheaply) are judged by the entitlement rule; a starved
// head's never are.
func (f *fairPreemption) judges(cheap bool) bool {
	return !f.head && byEntitlement(f.rule, cheap)
}

// boundsCheapMoves reports whether a move that takes a victim whose job
// does not save on stop must keep the preemptor and the victims' tenants
// within their entitlements (entitlement.within): under FairRuleAuto,
// which judges such victims by the entitlement rule when they lose
// little; the entitlement rule chosen outright (FairRuleEntitlement) is
// held to lowers alone.
func (f *fairPreemption) boundsCheapMoves() bool {
	return f.rule == FairRuleAuto
}

// othersStopCheaply reports whether the stop of every victim of set not
// of tenant acct (nil: every victim) costs little (victim.stopsCheaply).
func othersStopCheaply(acct *account, set []*victim) bool {
	return everyOther(acct, set, (*victim).stopsCheaply)
}

// everyOther reports whether ok holds for every victim of set not of
// tenant acct (nil: every victim).
func everyOther(acct *account, set []*victim, ok func(*victim) bool) bool {
	for _, v := range set {
		if v.acct != acct && !ok(v) {
			return false
		}
	}
	return true
}

// justSaved reports whether stopping v throws away next to nothing: its
// job saves a checkpoint when stopped, or it loses at most FairCrossLoss
// of work. A move whose victims of other tenants all did is not bounded
// by entitlement.within.
func (v *victim) justSaved() bool {
	return v.losesAtMost(FairCrossLoss)
}

// losesAtMost reports whether stopping v throws away at most most of
// work: its job saves a checkpoint when stopped, or it lost no more
// since its last one.
func (v *victim) losesAtMost(most time.Duration) bool {
	return v.saves || v.work <= most
}

// stopsCheaply reports whether stopping v costs little: its job saves a
// checkpoint when stopped, or it loses at most FairCheapLoss of work.
// FairRuleAuto judges such a victim by the entitlement rule.
func (v *victim) stopsCheaply() bool {
	return v.losesAtMost(FairCheapLoss)
}

// othersLose sums, per tenant other than acct's, what its victims of set
// use: what each loses to the preemption.
func othersLose(acct *account, set []*victim) map[*account]quota.Vector {
	lose := map[*account]quota.Vector{}
	for _, v := range set {
		if v.acct == acct {
			continue
		}
		if lose[v.acct] == nil {
			lose[v.acct] = quota.Vector{}
		}
		lose[v.acct].Add(v.use)
	}
	return lose
}

// takesFromOthers reports whether set holds a job of another tenant
// than the preemptor's.
func (f *fairPreemption) takesFromOthers(set []*victim) bool {
	for _, v := range set {
		if v.acct != f.acct {
			return true
		}
	}
	return false
}

// shareOf is a's weighted dominant share (account.computeShare) with
// delta added (sign 1) to or taken (sign -1) from its usage.
func shareOf(a *account, cluster, delta quota.Vector, sign int64) float64 {
	usage := quota.Vector{}
	usage.Add(a.usage)
	if sign > 0 {
		usage.Add(delta)
	} else {
		usage.Sub(delta)
	}
	saved, savedShare := a.setUsage(usage), a.share
	a.computeShare(cluster)
	s := a.share
	a.setUsage(saved)
	a.share = savedShare
	return s
}
