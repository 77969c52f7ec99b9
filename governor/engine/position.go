package engine

import (
	"sort"
	"time"
)

// QueuePosition returns where job j, queued now with class class in
// tenant ns, would stand in plan p's queue: its 1-based position overall
// and within its tenant. It orders like Decide's static order does, from
// the shares the plan recorded, so the proxy can answer without a whole
// cycle. Linear in the queue: for many calls on one plan use Positions.
func QueuePosition(p *Plan, cfg Config, j *Job, class string) (overall, tenant int) {
	return NewPositions(p, cfg).Of(j, class)
}

// Positions indexes a plan's queue by the order key (tier ↓, share ↑,
// class priority ↓, queued-at ↑; the tier is the class priority unless
// Config.QueueOrder is QueueOrderShare) so a position costs a binary search, not a walk
// of the queue. Build it once per plan; it is read-only afterwards.
type Positions struct {
	cfg      Config
	shares   map[string]float64
	all      []posKey
	byTenant map[string][]posKey
	// queued holds the key of every job in the queue.
	queued map[string]posKey
}

// posKey is one queued job's order key.
type posKey struct {
	tier  int
	prio  int
	share float64
	at    time.Time
	key   string
}

// before tells whether a stands ahead of a job with key b: a higher
// tier, a lower share, a higher class, or an earlier or equal queued-at.
func (a posKey) before(b posKey) bool {
	if c := a.cmp(b); c != 0 {
		return c < 0
	}
	return !a.at.After(b.at)
}

// cmp compares the parts of two keys before queued-at: −1 when a goes
// first, 1 when b does, 0 when they tie.
func (a posKey) cmp(b posKey) int {
	switch {
	case a.tier != b.tier:
		return boolCmp(a.tier > b.tier)
	case a.share != b.share:
		return boolCmp(a.share < b.share)
	case a.prio != b.prio:
		return boolCmp(a.prio > b.prio)
	}
	return 0
}

// boolCmp is −1 when first, else 1.
func boolCmp(first bool) int {
	if first {
		return -1
	}
	return 1
}

// keyOf is the order key of a job of tenant ns and class, queued at at.
func (ps *Positions) keyOf(ns, class string, at time.Time, key string) posKey {
	cl := ps.cfg.Classes[class]
	return posKey{tier: ps.cfg.queueTier(cl), prio: cl.Priority, share: ps.shares[ns], at: at, key: key}
}

// NewPositions indexes plan p's queue.
func NewPositions(p *Plan, cfg Config) *Positions {
	ps := &Positions{cfg: cfg, shares: map[string]float64{}, byTenant: map[string][]posKey{}, queued: map[string]posKey{}}
	for _, t := range p.Tenants {
		ps.shares[t.Namespace] = t.DominantShare
	}
	for _, v := range p.Queue {
		k := ps.keyOf(v.Namespace, v.Class, v.QueuedAt, v.Namespace+"/"+v.JobID)
		ps.all = append(ps.all, k)
		ps.queued[k.key] = k
		ps.byTenant[v.Namespace] = append(ps.byTenant[v.Namespace], k)
	}
	order := func(ks []posKey) {
		sort.Slice(ks, func(a, b int) bool {
			x, y := ks[a], ks[b]
			if c := x.cmp(y); c != 0 {
				return c < 0
			}
			return x.at.Before(y.at)
		})
	}
	order(ps.all)
	for _, ks := range ps.byTenant {
		order(ks)
	}
	return ps
}

// Of returns j's 1-based position overall and within its tenant.
func (ps *Positions) Of(j *Job, class string) (overall, tenant int) {
	k := ps.keyOf(j.Namespace, class, j.QueuedAt, j.Key())
	overall, tenant = 1+ahead(ps.all, k), 1+ahead(ps.byTenant[j.Namespace], k)
	// j itself, when queued already, does not stand ahead of itself.
	if self, ok := ps.queued[k.key]; ok && self.before(k) {
		overall, tenant = overall-1, tenant-1
	}
	return overall, tenant
}

// Ahead tells whether a queued job of tenant ns and class, queued at at,
// stands ahead of job j of class jclass in the plan's order: a tie on
// every part goes to the queued job.
func (ps *Positions) Ahead(ns, class string, at time.Time, j *Job, jclass string) bool {
	return ps.keyOf(ns, class, at, "").before(ps.keyOf(j.Namespace, jclass, j.QueuedAt, j.Key()))
}

// ahead counts the keys of sorted ks that stand before k.
func ahead(ks []posKey, k posKey) int {
	return sort.Search(len(ks), func(i int) bool { return !ks[i].before(k) })
}
