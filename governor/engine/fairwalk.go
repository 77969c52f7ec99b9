package engine

import (
	"container/heap"

	"github.com/allot-sh/allot/governor/quota"
)

// fairWalk yields the queue in admission order with fair share
// recomputed after each job: within one tier (owed preemptors, then
// class priority or, under QueueOrderShare, all preemptible classes
// together) the next job is the first, by class and age, of the tenant whose weighted
// dominant share is lowest now, so a tenant's admissions this cycle push
// its later jobs back behind tenants that got nothing yet.
type fairWalk struct {
	cy      *cycle
	cluster quota.Vector
	tiers   [][]*tenantQueue
	tier    int
	// seen is the usage version of each account at its last share, and
	// cohorts each cohort's at the last refresh: a refresh looks at the
	// members of cohorts whose usage changed only, so a step that
	// admitted nothing costs one look per cohort, not per tenant.
	seen    map[*account]uint64
	cohorts []cohortSeen
	// heap orders the current tier's tenant queues that still hold jobs
	// (before); byAcct finds an account's queue in it when its share
	// changes.
	heap   tenantHeap
	byAcct map[*account]*tenantQueue
}

// cohortSeen is a cohort's usage version at the walk's last refresh (a
// slice of them: refresh looks at each after every step, and ranging over
// a map cost more than the rest of the step).
type cohortSeen struct {
	co  *cohort
	ver uint64
}

// tenantQueue is one tenant's jobs of a tier, in queue order.
type tenantQueue struct {
	acct *account
	ns   string
	jobs []*queueEntry
	// at is the queue's index in the walk's heap.
	at int
}

// newFairWalk splits the statically ordered queue q into tiers and, per
// tier, tenant queues that keep q's order.
func (cy *cycle) newFairWalk(q byQueue) *fairWalk {
	w := &fairWalk{cy: cy, cluster: cy.clusterVector(), seen: map[*account]uint64{}}
	var byNS map[string]*tenantQueue
	for i := range q {
		e := &q[i]
		if i == 0 || e.owed != q[i-1].owed || e.tier != q[i-1].tier {
			w.tiers = append(w.tiers, nil)
			byNS = map[string]*tenantQueue{}
		}
		tq := byNS[e.j.Namespace]
		if tq == nil {
			tq = &tenantQueue{acct: cy.accts[e.j.Namespace], ns: e.j.Namespace}
			byNS[e.j.Namespace] = tq
			w.tiers[len(w.tiers)-1] = append(w.tiers[len(w.tiers)-1], tq)
		}
		tq.jobs = append(tq.jobs, &q[i])
	}
	cohorts := map[*cohort]bool{}
	for a := range cy.accountsSet() {
		w.seen[a] = a.version
		if !cohorts[a.cohort] {
			cohorts[a.cohort] = true
			w.cohorts = append(w.cohorts, cohortSeen{a.cohort, a.cohort.version})
		}
	}
	if len(w.tiers) > 0 {
		// The first tier; next starts each later one as the one before
		// empties.
		w.startTier()
	}
	return w
}

// next returns the entry of the next job to decide on; nil when the
// queue is done. The current tier's tenant queues are a heap by before: a step costs
// the log of the tenants, not a look at each.
func (w *fairWalk) next() *queueEntry {
	w.refresh()
	for len(w.heap.qs) == 0 {
		if w.tier++; w.tier >= len(w.tiers) {
			return nil
		}
		w.startTier()
	}
	best := w.heap.qs[0]
	e := best.jobs[0]
	best.jobs = best.jobs[1:]
	if len(best.jobs) == 0 {
		heap.Pop(&w.heap)
	} else {
		heap.Fix(&w.heap, 0)
	}
	return e
}

// startTier builds the heap of the current tier's tenant queues.
func (w *fairWalk) startTier() {
	w.heap = tenantHeap{w: w, qs: append([]*tenantQueue(nil), w.tiers[w.tier]...)}
	w.byAcct = make(map[*account]*tenantQueue, len(w.heap.qs))
	for i, tq := range w.heap.qs {
		tq.at = i
		if tq.acct != nil {
			w.byAcct[tq.acct] = tq
		}
	}
	heap.Init(&w.heap)
}

// tenantHeap is a heap of tenant queues ordered by the walk's before.
type tenantHeap struct {
	w  *fairWalk
	qs []*tenantQueue
}

func (h tenantHeap) Len() int           { return len(h.qs) }
func (h tenantHeap) Less(a, b int) bool { return h.w.before(h.qs[a], h.qs[b]) }
func (h tenantHeap) Swap(a, b int) {
	h.qs[a], h.qs[b] = h.qs[b], h.qs[a]
	h.qs[a].at, h.qs[b].at = a, b
}
func (h *tenantHeap) Push(x any) {
	tq := x.(*tenantQueue)
	tq.at = len(h.qs)
	h.qs = append(h.qs, tq)
}
func (h *tenantHeap) Pop() any {
	last := h.qs[len(h.qs)-1]
	h.qs = h.qs[:len(h.qs)-1]
	last.at = -1
	return last
}

// before orders two tenant queues: lowest current share, then the static
// order of their first jobs.
func (w *fairWalk) before(a, b *tenantQueue) bool {
	sa, sb := w.share(a), w.share(b)
	if sa != sb {
		return sa < sb
	}
	ea, eb := a.jobs[0], b.jobs[0]
	if !ea.j.QueuedAt.Equal(eb.j.QueuedAt) {
		return ea.j.QueuedAt.Before(eb.j.QueuedAt)
	}
	return jobLess(ea.j, eb.j)
}

func (w *fairWalk) share(tq *tenantQueue) float64 {
	if tq.acct == nil {
		return 0
	}
	return tq.acct.share
}

// refresh recomputes the shares of accounts whose usage changed.
func (w *fairWalk) refresh() {
	for i := range w.cohorts {
		co := w.cohorts[i].co
		if co.version == w.cohorts[i].ver {
			continue
		}
		w.cohorts[i].ver = co.version
		for _, a := range co.members {
			if ver, ok := w.seen[a]; ok && a.version != ver {
				a.computeShare(w.cluster)
				w.seen[a] = a.version
				w.reorder(a)
			}
		}
	}
}

// reorder moves a's queue of the current tier to its place after its
// share changed.
func (w *fairWalk) reorder(a *account) {
	if tq := w.byAcct[a]; tq != nil && tq.at >= 0 {
		heap.Fix(&w.heap, tq.at)
	}
}
