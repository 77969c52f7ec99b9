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

// Positions indexes a plan's queue by the order key (class priority ↓,
// share ↑, queued-at ↑) so a position costs a binary search, not a walk
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
	prio  int
	share float64
	at    time.Time
	key   string
}

// before tells whether a stands ahead of a job with key b: a higher
// class, a lower share, or an earlier or equal queued-at.
func (a posKey) before(b posKey) bool {
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.share != b.share {
		return a.share < b.share
	}
	return !a.at.After(b.at)
}

// NewPositions indexes plan p's queue.
func NewPositions(p *Plan, cfg Config) *Positions {
	ps := &Positions{cfg: cfg, shares: map[string]float64{}, byTenant: map[string][]posKey{}, queued: map[string]posKey{}}
	for _, t := range p.Tenants {
		ps.shares[t.Namespace] = t.DominantShare
	}
	for _, v := range p.Queue {
		k := posKey{prio: cfg.Classes[v.Class].Priority, share: ps.shares[v.Namespace], at: v.QueuedAt, key: v.Namespace + "/" + v.JobID}
		ps.all = append(ps.all, k)
		ps.queued[k.key] = k
		ps.byTenant[v.Namespace] = append(ps.byTenant[v.Namespace], k)
	}
	order := func(ks []posKey) {
		sort.Slice(ks, func(a, b int) bool {
			x, y := ks[a], ks[b]
			if x.prio != y.prio {
				return x.prio > y.prio
			}
			if x.share != y.share {
				return x.share < y.share
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
	k := posKey{prio: ps.cfg.Classes[class].Priority, share: ps.shares[j.Namespace], at: j.QueuedAt, key: j.Key()}
	overall, tenant = 1+ahead(ps.all, k), 1+ahead(ps.byTenant[j.Namespace], k)
	// j itself, when queued already, does not stand ahead of itself.
	if self, ok := ps.queued[k.key]; ok && self.before(k) {
		overall, tenant = overall-1, tenant-1
	}
	return overall, tenant
}

// ahead counts the keys of sorted ks that stand before k.
func ahead(ks []posKey, k posKey) int {
	return sort.Search(len(ks), func(i int) bool { return !ks[i].before(k) })
}
