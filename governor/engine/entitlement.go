package engine

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/allot-sh/allot/governor/quota"
)

// Which rule a fairness preemption between borrowers follows
// (Config.FairShareRule; governor config fair_share_rule).
const (
	// FairRuleGap (the default): the victim's tenant keeps a weighted
	// share Config.FairShareGap above the preemptor's tenant's after the
	// admission (fairpreempt.go).
	FairRuleGap = "gap"
	// FairRuleEntitlement: capacity moves only from tenants above their
	// entitlement to a tenant below its own, and only when the move
	// brings the tenants' usage closer to their entitlements
	// (entitlement.lowers). A gang larger than what its tenant lacks may
	// then take what it needs, where the gap rule waits for it to drain:
	// measured on the simulator's grid (docs/simulator.md, round 21).
	FairRuleEntitlement = "entitlement"
	// FairRuleAuto: FairRuleEntitlement, of any class, for victims whose
	// stop costs little (victim.stopsCheaply: they save a checkpoint when
	// stopped, Group.SavesOnStop, or lose at most FairCheapLoss; a move
	// that takes one that does not save keeps both sides within their
	// entitlements, entitlement.within); FairRuleGap and
	// Config.FairClasses for the others.
	FairRuleAuto = "auto"
)

// byEntitlement reports whether, under fair-share rule rule, a victim
// (or a set whose victims of other tenants all) whose stop costs little
// or not (cheap, victim.stopsCheaply) is judged by the entitlement rule:
// always under FairRuleEntitlement, only when cheap under FairRuleAuto.
func byEntitlement(rule string, cheap bool) bool {
	return rule == FairRuleEntitlement || rule == FairRuleAuto && cheap
}

// entitlement holds each cohort member's weighted max-min fair share
// (water-filling) of every governed resource: the cohort's capacity of
// it (its members' nominal quotas, no more than the cluster holds)
// divided among the members' demands (what their unfinished jobs ask
// for, each no more than its hard limit), weights its nominal quota
// times its weight. It is what the simulator scores the share error
// against (sim.FairShare).
type entitlement map[*account]map[string]float64

// entitlementOf returns cohort co's entitlement, computed once per cycle:
// demands do not change within a cycle (admissions and preemptions move
// usage, not what the jobs ask for).
func (cy *cycle) entitlementOf(co *cohort) entitlement {
	if e, ok := cy.pre.ents[co]; ok {
		return e
	}
	demand := cy.demands(co)
	cluster := cy.clusterVector()
	out := make(entitlement, len(co.members))
	for _, m := range co.members {
		out[m] = map[string]float64{}
	}
	weights := make([]float64, len(co.members))
	wants := make([]float64, len(co.members))
	for r := range co.governed {
		capacity := co.nominal[r]
		if c, ok := cluster[r]; ok && c < capacity {
			capacity = c
		}
		for i, m := range co.members {
			weights[i] = float64(m.t.Quota[r]) * m.t.Weight
			want := demand[m][r]
			if lim, ok := m.t.Limit[r]; ok && want > lim {
				want = lim
			}
			wants[i] = float64(want)
		}
		for i, f := range WaterFill(float64(capacity), weights, wants) {
			out[co.members[i]][r] = f
		}
	}
	if cy.pre.ents == nil {
		cy.pre.ents = map[*cohort]entitlement{}
	}
	cy.pre.ents[co] = out
	return out
}

// demands sums, per member of co, what its queued and running jobs ask
// for (every allocation of every group). A queued job counts though
// Nomad reports it dead (the governor holds it stopped); finished jobs
// and jobs a user stopped ask for nothing, nor does a job that asks for
// more than its tenant's hard limit allows (it can never run). One walk
// of the jobs per cycle serves every cohort (the borrow holds ask for
// the entitlement of each cohort they hold).
func (cy *cycle) demands(co *cohort) map[*account]quota.Vector {
	if cy.pre.demand == nil {
		cy.pre.demand = cy.allDemands()
	}
	out := make(map[*account]quota.Vector, len(co.members))
	for _, m := range co.members {
		out[m] = cy.pre.demand[m]
	}
	return out
}

// allDemands is demands for every account, in one walk of the jobs.
func (cy *cycle) allDemands() map[*account]quota.Vector {
	out := map[*account]quota.Vector{}
	var counts []int
	req := quota.Vector{}
	for _, j := range cy.jobs {
		a := cy.accts[j.Namespace]
		if a == nil || j.StoppedByUser || !(j.State == Queued || j.Running()) {
			continue
		}
		counts = counts[:0]
		for gi := range j.Groups {
			counts = append(counts, cy.want(j, gi))
		}
		for r := range req {
			delete(req, r)
		}
		addRequest(req, j, counts)
		if a.neverWithinLimit(req) {
			continue
		}
		if out[a] == nil {
			out[a] = quota.Vector{}
		}
		for r, n := range req {
			out[a][r] += n
		}
	}
	return out
}

// neverWithinLimit reports whether req alone asks for more of a governed
// resource than the tenant's hard limit.
func (a *account) neverWithinLimit(req quota.Vector) bool {
	for r, n := range req {
		if am, ok := a.limitAmount(r, n); ok && am.Never {
			return true
		}
	}
	return false
}

// byTenant is e keyed by namespace, as a plan shows it.
func (e entitlement) byTenant() map[string]map[string]float64 {
	out := make(map[string]map[string]float64, len(e))
	for a, v := range e {
		out[a.t.Namespace] = v
	}
	return out
}

// WaterFill divides capacity by weighted max-min fairness: nobody gets
// more than it wants, and what one leaves goes to the others in
// proportion to their weights. Entries of no weight or no want get 0.
// The simulator scores its share error against the same division
// (sim.FairShare).
func WaterFill(capacity float64, weights, wants []float64) []float64 {
	out := make([]float64, len(wants))
	var active []int
	for i := range wants {
		if wants[i] > 0 && weights[i] > 0 {
			active = append(active, i)
		}
	}
	// Fill in order of the level at which each is satisfied.
	sort.SliceStable(active, func(a, b int) bool {
		return wants[active[a]]/weights[active[a]] < wants[active[b]]/weights[active[b]]
	})
	left := capacity
	for k, i := range active {
		var sw float64
		for _, j := range active[k:] {
			sw += weights[j]
		}
		level := left / sw
		if wants[i]/weights[i] > level {
			for _, j := range active[k:] {
				out[j] = level * weights[j]
			}
			return out
		}
		out[i] = wants[i]
		left -= wants[i]
	}
	return out
}

// below reports whether a uses less than its entitlement of a resource
// req asks for.
func (e entitlement) below(a *account, req quota.Vector) bool {
	for r, n := range req {
		if n > 0 && a.cohort.governed[r] && float64(a.usage[r]) < e[a][r] {
			return true
		}
	}
	return false
}

// above reports whether a uses more than its entitlement of a resource
// use holds.
func (e entitlement) above(a *account, use quota.Vector) bool {
	for r, n := range use {
		if n > 0 && a.cohort.governed[r] && float64(a.usage[r]) > e[a][r] {
			return true
		}
	}
	return false
}

// keeps reports whether a still uses at least its entitlement of every
// governed resource after losing use.
func (e entitlement) keeps(a *account, use quota.Vector) bool {
	for r, n := range use {
		if n > 0 && a.cohort.governed[r] && float64(a.usage[r]-n) < e[a][r]-distanceEpsilon {
			return false
		}
	}
	return true
}

// gainsWithin reports whether a uses at most its entitlement of every
// governed resource after gaining gain: keeps' mirror, for the
// preemptor's side of a move.
func (e entitlement) gainsWithin(a *account, gain quota.Vector) bool {
	for r, n := range gain {
		if n > 0 && a.cohort.governed[r] && float64(a.usage[r]+n) > e[a][r]+distanceEpsilon {
			return false
		}
	}
	return true
}

// within reports whether a move that takes a victim of set of another
// tenant than preemptor p whose stop throws away more than next to
// nothing (not victim.justSaved: its job does not save a checkpoint when
// stopped and it loses more than FairCrossLoss) keeps both sides within
// their entitlements: p, after req less its own victims, at or below its
// own, and every other tenant at or above its own after losing all its
// victims of set (keeps). A set whose other tenants' victims all just
// saved is held to lowers alone. Under FairRuleAuto a victim that merely
// lost little work since its last checkpoint is judged by the entitlement
// rule; carried past its entitlement, a tenant would take back from a
// third, which would take from a fourth: with 32 tenants that tripled the
// preemptions. Bounding the victims' side alone, or the preemptor's as no
// farther from its entitlement, threw away more work on the standard
// weeks (docs/simulator.md, round 39); the victims' side alone, once the
// reclaim wait limit counted from when a job became a claim, met more
// targets where stops are instant and cost 0.28 points of net useful
// allocation a week where they take 2 minutes (round 41); so did
// admitting, beside these, moves that lower the distance by more than
// their request (0.29 points where stops take 2 minutes, 0.9 with 32
// tenants; round 42). Victims that lose at most FairCrossLoss are
// unbounded since round 44.
func (e entitlement) within(p *account, req quota.Vector, set []*victim) bool {
	if everyOther(p, set, (*victim).justSaved) {
		return true
	}
	gain := req.Clone()
	for _, v := range set {
		if v.acct == p {
			gain.Sub(v.use)
		}
	}
	if !e.gainsWithin(p, gain) {
		return false
	}
	for a, use := range othersLose(p, set) {
		if !e.keeps(a, use) {
			return false
		}
	}
	return true
}

// lowers reports whether admitting req for preemptor p and preempting
// set brings usage closer to the entitlement: the distance (Σ over the
// tenants involved and the governed resources that move of
// |usage − entitlement| ÷ the cluster's capacity of the resource) falls.
// Every such preemption lowers that sum over all tenants and resources,
// which only demands change, so tenants cannot take capacity back and
// forth while the demands stay.
func (e entitlement) lowers(p *account, req quota.Vector, set []*victim, cluster quota.Vector) bool {
	delta := map[*account]quota.Vector{p: req.Clone()}
	moved := map[string]bool{}
	for r := range req {
		moved[r] = true
	}
	for _, v := range set {
		if delta[v.acct] == nil {
			delta[v.acct] = quota.Vector{}
		}
		delta[v.acct].Sub(v.use)
		for r := range v.use {
			moved[r] = true
		}
	}
	var before, after float64
	for a, d := range delta {
		for r := range moved {
			if !p.cohort.governed[r] || cluster[r] <= 0 {
				continue
			}
			u, ent, c := float64(a.usage[r]), e[a][r], float64(cluster[r])
			before += math.Abs(u-ent) / c
			after += math.Abs(u+float64(d[r])-ent) / c
		}
	}
	return after < before-distanceEpsilon
}

// distanceEpsilon keeps rounding from counting as progress.
const distanceEpsilon = 1e-9

// text describes a's usage against its entitlement of the resources req
// asks for (a preemption's reason).
func (e entitlement) text(a *account, req quota.Vector) string {
	var parts []string
	for _, r := range req.Keys() {
		if req[r] > 0 && a.cohort.governed[r] {
			parts = append(parts, fmt.Sprintf("%s: uses %d, entitled to %.1f", r, a.usage[r], e[a][r]))
		}
	}
	return strings.Join(parts, "; ")
}
