package engine

import (
	"fmt"
	"sort"
	"time"
)

// Borrow hold (issue 14): a starving reservation protects nodes, but a
// multi-node gang of a tenant below its nominal quota mostly waits on
// its quota check, not on free nodes: the gang needs to borrow, and the
// tenants above their nominal have already borrowed everything the
// cohort can lend (measured: 67-82 % of the lowest tenant's queued
// gang-hours on the standard fleet fail quota, and such a gang never
// becomes a starving head). Each cycle, per cohort, the job that has
// waited longer than the starvation timeout and needs more than the
// cohort can lend, of the tenant with the lowest weighted share below
// its nominal, holds the cohort's lending: no other job of the cohort
// may borrow past its tenant's fair share of the cohort (it fails an
// order check naming the head; pastEntitlement) until the head has been
// admitted. What the borrowers hold drains as their jobs end; jobs
// within their tenant's nominal quota or fair share are not held back.
//
// Measured on the simulator's grid (docs/simulator.md): a tenant must
// be below HoldShareMax of its nominal quota to hold. Before moves
// (move.go) the drains cost up to 1.9 points of useful allocation at 1
// (any tenant below its nominal), up to 1.3 at 0.75, so it was 0.5; with
// moves shortening the drains, 0.75 kept useful allocation within a
// point of nomad-fifo's on every row measured and 1 did not. With
// starved heads preempting borrowers of any class (round 7), 0.9 keeps
// it there too and lowers the share error (round 8); 1 still does not.
type borrowHold struct {
	head *Job
	acct *account
	// since is when the head was queued (its reason shows the wait).
	since time.Time
	// start is when, by the run times of what the cohort's borrowers
	// run, enough of their borrowing has ended for the head's quota
	// check to pass; zero when unknown. A job that would borrow may
	// still start when it ends by then (backfill).
	start time.Time
}

// HoldShareMax is the weighted share (usage ÷ nominal quota) below which
// a tenant's starved head may hold its cohort's lending and reserve ahead
// of the walk.
const HoldShareMax = 0.9

// BorrowHold is a cohort's borrow hold as the plan shows it.
type BorrowHold struct {
	// Job is the head's "namespace/id"; Cohort the cohort it holds.
	Job    string
	Cohort string
	// Start is when, by the borrowers' run times, the head may borrow
	// enough; zero when unknown.
	Start time.Time `json:",omitempty"`
	// Entitled is each cohort member's entitlement (entitlement.go) by
	// namespace and resource: the hold holds back only borrowing past it.
	Entitled map[string]map[string]float64 `json:",omitempty"`
}

// findBorrowHolds picks each cohort's borrow hold from the queue q
// (queue order) before the admission walk: the first job, in queue order,
// of the tenant with the lowest weighted share below its nominal that
// has waited longer than the starvation timeout and can run but for its
// cohort's borrowers or free nodes. Needing to borrow more than the
// cohort can lend, it holds the cohort's lending; not fitting free
// capacity, it becomes its pool's starving head with a reservation
// (reserve.go) ahead of the walk, whoever would otherwise starve first.
func (cy *cycle) findBorrowHolds(q []queueEntry) {
	cy.borrowHolds = map[*cohort]*borrowHold{}
	heads := map[*cohort]*starvedHead{}
	// none holds the tenant and shape of jobs found not to be
	// starved heads: nothing this loop reads changes while it runs, so a
	// backlog of like jobs is judged once per shape, not once per job.
	none := map[tenantShape]bool{}
	for i := range q {
		j := q[i].j
		acct := cy.accts[j.Namespace]
		if acct == nil || acct.share >= HoldShareMax || cy.s.Now.Sub(j.QueuedAt) <= cy.cfg.StarvationTimeout {
			continue
		}
		if h := heads[acct.cohort]; h != nil && h.acct.share <= acct.share {
			continue
		}
		if h := cy.starvedHeadOf(&q[i], acct, none); h != nil {
			heads[acct.cohort] = h
		}
	}
	cy.starvedHeads = map[*Job]bool{}
	cohorts := make([]*cohort, 0, len(heads))
	for co := range heads {
		cohorts = append(cohorts, co)
	}
	sort.Slice(cohorts, func(a, b int) bool { return cohorts[a].name < cohorts[b].name })
	for _, co := range cohorts {
		h := heads[co]
		cy.starvedHeads[h.j] = true
		if h.borrow {
			bh := &borrowHold{head: h.j, acct: h.acct, since: h.j.QueuedAt, start: cy.borrowStart(h.j, h.acct)}
			cy.borrowHolds[co] = bh
			cy.plan.BorrowHolds = append(cy.plan.BorrowHolds, BorrowHold{Job: h.j.Key(), Cohort: co.name, Start: bh.start,
				Entitled: cy.entitlementOf(co).byTenant()})
		}
		// One reservation per pool: cohorts sharing a pool give it to
		// the lower share (then the first cohort by name).
		if h.r != nil && !h.borrow {
			if prev := cy.starving[h.j.Pool()]; prev == nil || cy.accts[prev.Namespace].share > h.acct.share {
				cy.setStarving(h.j, h.r)
			}
		}
	}
}

// starvedHead is a candidate for a cohort's borrow hold.
type starvedHead struct {
	j      *Job
	acct   *account
	borrow bool
	r      *reservation
}

// starvedHeadOf describes the job of queue entry e when it could run but
// for what its cohort's other tenants borrow or for free nodes: its class
// is allowed,
// it is not backing off, it stays within its limits, it needs no more
// than the others could ever lend, and it fits its node pool when empty;
// nil when it may be admitted now or never. Past the job's own state
// (stopped, system, a bad run time, backing off) and its class, the
// answer depends only on its tenant and shape: a nil one is kept in none
// under them.
func (cy *cycle) starvedHeadOf(e *queueEntry, acct *account, none map[tenantShape]bool) *starvedHead {
	j := e.j
	if j.StoppedByUser || j.System || j.MaxRuntimeErr != "" {
		return nil
	}
	if _, wait := cy.checkBackoff(j); wait {
		return nil
	}
	if !cy.checkClass(j, acct).OK {
		return nil
	}
	// Past the class, the answer depends on the tenant and shape only.
	key := tenantShape{ns: j.Namespace, shape: e.shape}
	if none[key] {
		return nil
	}
	h := cy.starvedShape(e, acct)
	if h == nil {
		none[key] = true
	}
	return h
}

// starvedShape is starvedHeadOf past the job's own state and class.
func (cy *cycle) starvedShape(e *queueEntry, acct *account) *starvedHead {
	j, missing, shape := e.j, e.missing, e.shape
	req := e.request()
	if !acct.withinLimit(req) {
		return nil
	}
	for r, n := range req {
		if n > 0 && acct.cohort.governed[r] && n > acct.t.Quota[r]+acct.lendable(r) {
			return nil
		}
	}
	if cy.neverFits(j, missing, shape) != nil {
		return nil
	}
	h := &starvedHead{j: j, acct: acct, borrow: !acct.withinQuota(req)}
	// Fitting free capacity now needs no reservation (a fit, undone;
	// capacity only shrinks in a cycle, so a failure it caches stays
	// true).
	if fit := cy.cap.fitKeyed(j, missing, shape); fit.ok {
		cy.cap.undo(fit.takes)
		if !h.borrow {
			return nil
		}
		return h
	}
	if r := cy.reserveFor(j, missing); r.Start.IsZero() || r.Start.After(cy.s.Now) {
		h.r = r
	}
	if !h.borrow && h.r == nil {
		return nil
	}
	return h
}

// lendable is the most the cohort's other members could ever lend a of
// resource r: their lendable nominal.
func (a *account) lendable(r string) int64 {
	if n, ok := a.lend[r]; ok {
		return n
	}
	var n int64
	for _, m := range a.cohort.members {
		if m != a {
			n += max64(0, min64(m.t.LendCap(r), m.t.Quota[r]))
		}
	}
	if a.lend == nil {
		a.lend = map[string]int64{}
	}
	a.lend[r] = n
	return n
}

// checkBorrowHold fails a job that would borrow from its cohort while
// another job holds the cohort's lending; nil when it may go on. An owed
// preemptor (its victims were requeued for it within reclaimWindow) goes
// on past its own tenant's hold: what its victims freed is its own, and
// its preemption may itself have made the hold (its victims leaving its
// tenant below 0.9 of its nominal, its tenant's older gang became the
// starved head), which would keep it waiting with its victims stopped
// for nothing. Another tenant's hold still holds it (docs/simulator.md,
// round 47).
func (cy *cycle) checkBorrowHold(j *Job, acct *account, quotaCheck Check) *Check {
	h := cy.borrowHolds[acct.cohort]
	if h == nil || (cy.pre.owed[j.Key()] && h.acct == acct) || !borrows([]Check{quotaCheck}) || !holdsBack(cy.cfg, h.head.Key(), h.start, j, cy.s.Now) {
		return nil
	}
	over := pastEntitlement(cy.entitlementOf(acct.cohort)[acct], quotaCheck)
	if over == "" {
		return nil
	}
	return &Check{Name: "order", Cohort: acct.cohort.name, Detail: fmt.Sprintf("would borrow from cohort %s, whose lending is held for %s (tenant %s, below its nominal quota at weighted share %.2f, has waited %s, longer than the starvation timeout %s), past its fair share of the cohort (%s): borrowing past the fair shares resumes once it is admitted",
		acct.cohort.name, h.head.Key(), h.acct.t.Namespace, h.acct.share, cy.s.Now.Sub(h.since).Round(time.Second), cy.cfg.StarvationTimeout, over)}
}

// pastEntitlement tells how the admission a quota check judged would
// take its tenant past its entitlement ent (entitlement.go, rounded to
// the nearest unit) of a resource it asks for, as "gpu: would use 24,
// fair share 12.4"; "" when it stays within them all. A borrow hold
// holds back only borrowing past the fair shares: the hold drains what
// tenants borrow beyond their part of the cohort so that the starved
// head can take its own, and a tenant that borrows within its part takes
// nothing the head is entitled to (measured on the simulator: docs/simulator.md, round 28).
func pastEntitlement(ent map[string]float64, quotaCheck Check) string {
	for _, am := range quotaCheck.Amounts {
		if after := am.Used + am.Need; am.Need > 0 && float64(after) > ent[am.Resource]+0.5 {
			return fmt.Sprintf("%s: would use %d, fair share %.1f", am.Resource, after, ent[am.Resource])
		}
	}
	return ""
}

// holdsBack reports whether the borrow hold of head, which may borrow
// from start (zero: unknown), holds back job j, which would borrow: unless
// j is the head or ends before start, by the run time a cycle assumes.
// The cycle (checkBorrowHold) and the proxy's quick verdict
// (Plan.BorrowHeldBy) apply this one rule.
func holdsBack(cfg Config, head string, start time.Time, j *Job, now time.Time) bool {
	return head != j.Key() && !(&Reservation{Start: start}).EndsWithin(cfg.RuntimeOf(j), now)
}

// borrowStart is when enough of what the other cohort members borrow
// has ended, by the expected ends of their allocations (allocEnd), for
// head j's request to fit its tenant's nominal plus what the cohort can
// lend; zero when unknown (an allocation it needs has no run time, or
// what ends is not enough).
func (cy *cycle) borrowStart(j *Job, acct *account) time.Time {
	req := requestVector(j, cy.missing(j))
	start := cy.s.Now
	for _, r := range req.Keys() {
		n := req[r]
		if n <= 0 || !acct.cohort.governed[r] {
			continue
		}
		short := acct.usage[r] + n - acct.t.Quota[r] - acct.borrowable(r)
		if short <= 0 {
			continue
		}
		at, ok := cy.borrowEnds(acct, r, short)
		if !ok {
			return time.Time{}
		}
		if at.After(start) {
			start = at
		}
	}
	return start
}

// borrowEnds walks the live allocations of the cohort's members above
// their nominal of r (other than acct) in the order of their expected
// ends and returns when short of their borrowing has ended.
func (cy *cycle) borrowEnds(acct *account, r string, short int64) (time.Time, bool) {
	excess := map[string]int64{}
	for _, m := range acct.cohort.members {
		if m != acct && m.usage[r] > m.t.Quota[r] {
			excess[m.t.Namespace] = m.usage[r] - m.t.Quota[r]
		}
	}
	var ends []endingAlloc
	for _, a := range cy.s.Allocs {
		if excess[a.Namespace] <= 0 || !a.Live || cy.replaced[a.ID] || allocVector(a)[r] <= 0 {
			continue
		}
		end, ok := cy.allocEnd(a)
		if !ok {
			end = time.Time{}
			if !a.StartedAt.IsZero() && cy.s.Now.After(a.StartedAt) {
				// Past its estimate or without one: heavy-tailed run
				// times, so it is guessed to run as long again.
				end = cy.s.Now.Add(cy.s.Now.Sub(a.StartedAt))
			}
		}
		ends = append(ends, endingAlloc{a, end})
	}
	sort.Slice(ends, func(x, y int) bool {
		ex, ey := ends[x].end, ends[y].end
		if ex.IsZero() != ey.IsZero() {
			return ey.IsZero()
		}
		if !ex.Equal(ey) {
			return ex.Before(ey)
		}
		return ends[x].a.ID < ends[y].a.ID
	})
	for _, e := range ends {
		if e.end.IsZero() {
			return time.Time{}, false
		}
		got := min64(allocVector(e.a)[r], excess[e.a.Namespace])
		excess[e.a.Namespace] -= got
		if short -= got; short <= 0 {
			return e.end, true
		}
	}
	return time.Time{}, false
}

// BorrowHeldBy tells why plan p's borrow holds leave job j, which a Base
// admitted with checks, to the next cycle: j would borrow from a cohort
// whose lending another job holds, and it may run past the time that
// job may borrow (holdsBack, the rule a cycle applies). A Base
// knows no queue, hence no hold; within one node pool the head waits and
// holds j back (WaitersAhead), but without this a submission in another
// node pool of the cohort would borrow past the hold. "" when none does.
func (p *Plan) BorrowHeldBy(cfg Config, j *Job, checks []Check, now time.Time) string {
	if len(p.BorrowHolds) == 0 || !borrows(checks) {
		return ""
	}
	var quotaCheck Check
	for _, c := range checks {
		if c.Name == "quota" {
			quotaCheck = c
		}
	}
	for _, h := range p.BorrowHolds {
		if h.Cohort != quotaCheck.Cohort || !holdsBack(cfg, h.Job, h.Start, j, now) {
			continue
		}
		over := pastEntitlement(h.Entitled[j.Namespace], quotaCheck)
		if over == "" {
			continue
		}
		return fmt.Sprintf("order: would borrow from cohort %s, whose lending is held for %s (below its nominal quota, waiting longer than the starvation timeout), past its fair share of the cohort (%s); the next cycle decides", h.Cohort, h.Job, over)
	}
	return ""
}
