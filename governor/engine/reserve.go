package engine

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// reservation is the capacity a starving queue head holds: the nodes
// its gang goes to and the earliest time they are free enough for it,
// from the runtime estimates of what runs on them (Slurm's backfill).
// Only that capacity is protected: a later job of the pool may start now
// if it ends before Start (its runtime estimate says so) or fits the
// pool's free capacity outside the reserved nodes.
type reservation struct {
	head *Job
	// Start is the earliest start; zero when unknown (an allocation the
	// head needs has no runtime estimate): only jobs that fit outside the
	// reserved nodes may then start.
	Start time.Time
	// Nodes are the reserved nodes' IDs, sorted.
	Nodes []string
	nodes map[string]bool
}

// Reservation is a starving queue head's reservation as the plan shows
// it.
type Reservation struct {
	// Job is the head's "namespace/id"; Pool its node pool.
	Job  string
	Pool string
	// Start is the earliest start; zero when unknown.
	Start time.Time `json:",omitempty"`
	// Nodes are the reserved nodes' IDs.
	Nodes []string
}

// RuntimeOf is the run time the engine assumes for j: its
// allot.max-runtime when set, else the estimate learned for it; zero
// when unknown.
func RuntimeOf(j *Job) time.Duration {
	if j.MaxRuntime > 0 {
		return j.MaxRuntime
	}
	return j.Estimate
}

// allocEnd is when live allocation a is expected to end: its start plus
// its job's run time. An allocation past an enforced limit ends now
// (the governor stops it); past a learned estimate, or with no estimate,
// its end is unknown (ok false).
func (cy *cycle) allocEnd(a *Alloc) (time.Time, bool) {
	j := cy.jobByID(a.Namespace, a.JobID)
	if j == nil || a.StartedAt.IsZero() {
		return time.Time{}, false
	}
	rt := cy.cfg.RuntimeOf(j)
	if rt <= 0 {
		return time.Time{}, false
	}
	end := a.StartedAt.Add(rt)
	if !end.After(cy.s.Now) {
		if j.MaxRuntime <= 0 {
			return time.Time{}, false
		}
		end = cy.s.Now
	}
	return end, true
}

// jobID names a job by namespace and ID: a map key that needs no
// "namespace/id" string built.
type jobID struct{ ns, id string }

func idOf(j *Job) jobID { return jobID{j.Namespace, j.ID} }

// jobByID finds a job of the snapshot by namespace and ID.
func (cy *cycle) jobByID(ns, id string) *Job {
	cy.indexJobs()
	return cy.byID[jobID{ns, id}]
}

// inSnapshot reports whether j is the snapshot's job of its namespace and
// ID (not a submission the proxy judges, which has no place in it).
func (cy *cycle) inSnapshot(j *Job) bool {
	cy.indexJobs()
	return cy.byID[idOf(j)] == j
}

// indexJobs builds byID on first use.
func (cy *cycle) indexJobs() {
	if cy.byID != nil {
		return
	}
	cy.byID = make(map[jobID]*Job, len(cy.jobs))
	for _, j := range cy.jobs {
		cy.byID[idOf(j)] = j
	}
}

// endingAlloc is a live allocation of the head's pool with a known end.
type endingAlloc struct {
	a   *Alloc
	end time.Time
}

// reserveFor computes the reservation of starving head j: the fewest
// ending allocations (in end order) whose release lets the whole gang fit
// beside today's free capacity. Capacity only grows as allocations end,
// so a binary search over the end order finds it.
func (cy *cycle) reserveFor(j *Job, missing []int) *reservation {
	r := &reservation{head: j, nodes: map[string]bool{}}
	pool := map[string]bool{}
	for _, fn := range cy.cap.candidates(j) {
		pool[fn.node.ID] = true
	}
	// Allocations of unknown end come last: when the head needs one of
	// them, its start is unknown but its nodes still are.
	var ends, unknown []endingAlloc
	for _, a := range cy.s.Allocs {
		if !a.holds() || cy.replaced[a.ID] || !pool[a.NodeID] {
			continue
		}
		if a.Stopping {
			// Nomad is stopping it: it ends now.
			ends = append(ends, endingAlloc{a, cy.s.Now})
		} else if end, ok := cy.allocEnd(a); ok {
			ends = append(ends, endingAlloc{a, end})
		} else {
			unknown = append(unknown, endingAlloc{a: a})
		}
	}
	// Ordered by end, then ID: the plan must not depend on input order.
	sort.Slice(ends, func(x, y int) bool {
		if !ends[x].end.Equal(ends[y].end) {
			return ends[x].end.Before(ends[y].end)
		}
		return ends[x].a.ID < ends[y].a.ID
	})
	sort.Slice(unknown, func(x, y int) bool { return unknown[x].a.ID < unknown[y].a.ID })
	known := len(ends)
	ends = append(ends, unknown...)
	// One scratch copy of the pool, refilled per probe.
	cands := cy.cap.candidates(j)
	scratch := cy.cap.scratch(cands)
	k := sort.Search(len(ends)+1, func(k int) bool { return fitsAfter(scratch, cands, j, missing, ends[:k]) != nil })
	switch {
	case k > len(ends):
		return r
	case k == 0:
		r.Start = cy.s.Now
	case k <= known:
		r.Start = ends[k-1].end
	}
	for _, tk := range fitsAfter(scratch, cands, j, missing, ends[:k]) {
		if !r.nodes[tk.fn.node.ID] {
			r.nodes[tk.fn.node.ID] = true
			r.Nodes = append(r.Nodes, tk.fn.node.ID)
		}
	}
	sort.Strings(r.Nodes)
	return r
}

// fitsAfter fits j on scratch, a copy of the free capacity of nodes src
// (capacity.scratch), refilled from src and with the allocations of ended
// released; it returns the takes, nil when it does not fit.
func fitsAfter(scratch *capacity, src []*freeNode, j *Job, missing []int, ended []endingAlloc) []take {
	scratch.refill(src)
	for _, e := range ended {
		if fn := scratch.byID[e.a.NodeID]; fn != nil {
			fn.cpu += e.a.CPU
			fn.mem += e.a.MemoryMB
			for i, id := range fn.ids {
				fn.addDev(i, e.a.Devices[id])
			}
		}
	}
	fit := scratch.fit(j, missing)
	if !fit.ok {
		return nil
	}
	return fit.takes
}

// scratch returns a capacity over copies of nodes' free capacity, with
// empty caches, for what-if fits that leave c untouched.
func (c *capacity) scratch(nodes []*freeNode) *capacity {
	s := &capacity{byID: map[string]*freeNode{}, byPool: map[string][]*freeNode{}, m: c.m,
		failed: map[string]string{}, cursor: map[string]int{}, sys: map[string][]*freeNode{}, placedOn: c.placedOn}
	for _, fn := range nodes {
		cp := &freeNode{node: fn.node, cpu: fn.cpu, mem: fn.mem, dev: append([]int(nil), fn.dev...), ids: fn.ids}
		s.nodes = append(s.nodes, cp)
		s.byID[cp.node.ID] = cp
		s.byPool[cp.node.Pool] = append(s.byPool[cp.node.Pool], cp)
	}
	s.index()
	return s
}

// refill resets s, made by scratch(src), to src's free capacity and
// empties its caches, for the next what-if fit.
func (s *capacity) refill(src []*freeNode) {
	for i, fn := range src {
		cp := s.nodes[i]
		cp.cpu, cp.mem = fn.cpu, fn.mem
		copy(cp.dev, fn.dev)
	}
	s.reindex()
	for k := range s.failed {
		delete(s.failed, k)
	}
	for k := range s.cursor {
		delete(s.cursor, k)
	}
	for k := range s.sys {
		delete(s.sys, k)
	}
}

// EndsWithin tells whether a job of run time rt (> 0), started at now,
// ends by the reservation's start; Config.RuntimeOf gives rt with the
// learned estimates.
func (r *Reservation) EndsWithin(rt time.Duration, now time.Time) bool {
	return !r.Start.IsZero() && rt > 0 && !now.Add(rt).After(r.Start)
}

// checkBackfill decides whether job j may start beside the reservation
// r of its pool's starving head: when its run time ends before r starts,
// or when it fits outside the reserved nodes. It returns the order check
// and, when j may go on, the fit to use (nil: the usual fit).
func (cy *cycle) checkBackfill(j *Job, missing []int, shape string, r *reservation) (Check, *fitResult) {
	rt := cy.cfg.RuntimeOf(j)
	if (&Reservation{Start: r.Start}).EndsWithin(rt, cy.s.Now) {
		return Check{Name: "order", OK: true, Detail: fmt.Sprintf("backfill: runs at most %s, ending before %s's reservation starts at %s",
			rt, r.head.Key(), r.Start.UTC().Format(time.RFC3339))}, nil
	}
	if len(r.Nodes) > 0 {
		cy.cap.exclude = r.nodes
		fit := cy.cap.fitKeyed(j, missing, shape+"|x"+strings.Join(r.Nodes, ","))
		cy.cap.exclude = nil
		if fit.ok {
			return Check{Name: "order", OK: true, Detail: fmt.Sprintf("backfill: fits outside the %d nodes reserved for %s", len(r.Nodes), r.head.Key())}, &fit
		}
	}
	return cy.behindReservation(j, r), nil
}

func (cy *cycle) behindReservation(j *Job, r *reservation) Check {
	head := r.head
	waited := cy.s.Now.Sub(head.QueuedAt).Round(time.Second)
	var when string
	switch rt := cy.cfg.RuntimeOf(j); {
	case r.Start.IsZero():
		when = "its start is unknown (what runs on its nodes has no runtime estimate)"
	case rt <= 0:
		when = fmt.Sprintf("it starts at %s on %d reserved nodes; this job has no runtime estimate (allot.max-runtime)", r.Start.UTC().Format(time.RFC3339), len(r.Nodes))
	default:
		when = fmt.Sprintf("it starts at %s on %d reserved nodes; this job may run %s, past that", r.Start.UTC().Format(time.RFC3339), len(r.Nodes), rt)
	}
	return Check{Name: "order", Detail: fmt.Sprintf("waiting behind %s, which has waited %s (longer than the starvation timeout %s) and holds a reservation: %s",
		head.Key(), waited, cy.cfg.StarvationTimeout, when)}
}

// HeldBackBy tells why plan p leaves job j, which a Base admitted on its
// own (a submission through the proxy, or the simulator's model of one),
// to the next cycle instead; "" when it does not. Its pool's starving
// head holds it back (HeadAhead), and so do other queued jobs of its
// pool that wait for capacity (WaitersAhead). An update of a job that is
// already admitted takes no new place in the queue: only HeadAhead
// applies to it.
func (p *Plan) HeldBackBy(cfg Config, j *Job, now time.Time) string {
	if why := p.HeadAhead(cfg, j, now); why != "" {
		return why
	}
	return p.WaitersAhead(j)
}

// HeadAhead tells why j's pool's starving head holds j back: unless j is
// that head or ends before the head's reservation starts (backfill, by
// the run time a cycle assumes; whether j fits outside the reserved nodes
// only a cycle knows). "" when it does not.
func (p *Plan) HeadAhead(cfg Config, j *Job, now time.Time) string {
	if head, ok := p.Starving[j.Pool()]; ok && head != j.Key() && !p.backfills(cfg, j, now) {
		return "order: waiting behind " + head + ", which has waited longer than the starvation timeout, does not fit yet and holds a reservation this job would outlive"
	}
	return ""
}

// WaitersAhead tells why other queued jobs of j's pool that wait for
// capacity (Plan.Waiting) hold j back: the cycle hands freed capacity out
// in queue order, by class and fair share, and a submission taking it at
// once would pass them all (measured in the simulator: docs/simulator.md,
// round 10). With no one waiting, a job that fits is admitted at once.
// "" when none waits.
func (p *Plan) WaitersAhead(j *Job) string {
	pool := j.Pool()
	if w := p.Waiting[pool]; w.Count > 1 || (w.Count == 1 && w.First != j.Key()) {
		return fmt.Sprintf("order: %d queued jobs of node pool %s wait for capacity (first %s); the next cycle admits in queue order", w.Count, pool, w.First)
	}
	return ""
}

// backfills tells whether j ends before the reservation of its pool's
// starving head in p starts.
func (p *Plan) backfills(cfg Config, j *Job, now time.Time) bool {
	for i := range p.Reservations {
		if r := &p.Reservations[i]; r.Pool == j.Pool() {
			return r.EndsWithin(cfg.RuntimeOf(j), now)
		}
	}
	return false
}
