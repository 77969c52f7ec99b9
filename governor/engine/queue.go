package engine

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/quota"
)

// queue returns the held jobs' entries in queue order: owed preemptors,
// the tier (Config.queueTier: class priority, highest first, unless
// Config.QueueOrder is QueueOrderShare), the tenant's weighted dominant
// share (lowest first), class priority, queued-at (oldest first), then
// namespace and ID.
func (cy *cycle) queue(jobs []*Job) byQueue {
	owed := cy.owedPreemptors(jobs)
	q := make(byQueue, 0, len(jobs))
	for _, j := range jobs {
		if j.State != Queued {
			continue
		}
		if j.StoppedByUser {
			cy.decide(j, Forget, "stopped by its user while queued: removed from the queue")
			continue
		}
		key := j.Key()
		cl := cy.cfg.Classes[cy.className(j)]
		e := queueEntry{j: j, key: key, owed: owed[key], prio: cl.Priority, tier: cy.cfg.queueTier(cl)}
		if a := cy.accts[j.Namespace]; a != nil {
			e.share = a.share
		}
		q = append(q, e)
	}
	sort.Sort(q)
	return q
}

// queueEntry is a held job with what orders it.
type queueEntry struct {
	j    *Job
	owed bool
	prio int
	// tier is the class's place before the shares (Config.queueTier).
	tier  int
	share float64
	// key, missing and shape are filled for the admission walk
	// (admitQueue): the job's key, the allocations it still needs and its
	// shape key, computed once for the walk's checks and the borrow holds.
	key     string
	missing []int
	shape   string
	// req is the request of the missing allocations (request), built on
	// first use; read only.
	req quota.Vector
}

// request returns requestVector of the entry's job and missing
// allocations, built once.
func (e *queueEntry) request() quota.Vector {
	if e.req == nil {
		e.req = requestVector(e.j, e.missing)
	}
	return e.req
}

// byQueue orders entries: owed preemptors first, then tier (highest
// first), share (lowest first), class priority, queued-at, namespace and
// ID.
type byQueue []queueEntry

func (q byQueue) Len() int      { return len(q) }
func (q byQueue) Swap(a, b int) { q[a], q[b] = q[b], q[a] }
func (q byQueue) Less(a, b int) bool {
	ea, eb := &q[a], &q[b]
	switch {
	case ea.owed != eb.owed:
		return ea.owed
	case ea.tier != eb.tier:
		return ea.tier > eb.tier
	case ea.share != eb.share:
		return ea.share < eb.share
	case ea.prio != eb.prio:
		return ea.prio > eb.prio
	case !ea.j.QueuedAt.Equal(eb.j.QueuedAt):
		return ea.j.QueuedAt.Before(eb.j.QueuedAt)
	}
	return jobLess(ea.j, eb.j)
}

// admitQueue walks the queue once and admits every job whose checks all
// pass; the others stay queued with their first failing check as reason.
// Shares are recomputed after each admission (fairwalk.go), so positions
// follow the walk, not the entries' static order.
func (cy *cycle) admitQueue(entries byQueue) {
	tenantPos := map[string]int{}
	cy.plan.Queue = make([]Verdict, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		e.missing = cy.missing(e.j)
		e.shape = cy.shapeOf(e.j, e.missing)
	}
	cy.findBorrowHolds(entries)
	cy.holdMoves()
	walk := cy.newFairWalk(entries)
	for e := walk.next(); e != nil; e = walk.next() {
		j := e.j
		acct := cy.accts[j.Namespace]
		if acct == nil {
			cy.decide(j, Admit, "namespace "+j.Namespace+" is no longer governed")
			continue
		}
		v := cy.verdictKeyed(j, e.key)
		if c, wait := cy.checkBackoff(j); wait {
			v.Checks, v.Reason = []Check{c}, c.Name+": "+c.Detail
		} else if cy.admitOne(e, acct, v) {
			continue
		}
		acct.queued++
		tenantPos[j.Namespace]++
		// The verdict is final here: the queue holds a copy of it.
		v.Position, v.TenantPosition = len(cy.plan.Queue)+1, tenantPos[j.Namespace]
		cy.plan.Queue = append(cy.plan.Queue, *v)
		cy.noteWaiting(j, v)
	}
}

// admitOne runs the checks of j and admits it when all pass; otherwise
// it tries preemption, whose outcome becomes the verdict's reason.
func (cy *cycle) admitOne(e *queueEntry, acct *account, v *Verdict) bool {
	j := e.j
	var admitted bool
	v.Checks, v.Reason, admitted = cy.memoChecks(e, acct)
	if admitted {
		v.State, v.Reason = Admitted, "admitted: every check passed"
		cy.decide(j, Admit, admitReason(v.Checks))
		cy.plan.Decisions[len(cy.plan.Decisions)-1].Nodes = cy.pinOf(j, cy.placementOf(j), cy.last.takes)
		return true
	}
	if why, ok := cy.tryPreempt(j, acct, v.Checks); ok || why != "" {
		v.Reason = why
	}
	return false
}

// tenantShape names a tenant's jobs of one shape (the entry's shape key):
// what a cycle judges once for all of them.
type tenantShape struct{ ns, shape string }

// memoKey names what a failed admission's outcome depends on besides the
// usage versions memoEntry records: the tenant, the job's shape key and
// its run time.
type memoKey struct {
	tenantShape
	runtime time.Duration
}

// memoEntry is the outcome of a failed admission for one job shape of one
// tenant, valid while neither the tenant's nor its cohort's usage nor the
// starving heads change (capacity only shrinks, so a failed fit stays
// failed).
type memoEntry struct {
	acctVer, cohortVer, starveVer uint64
	// cohort tells whether the outcome depends on the cohort's usage
	// (the job needed to borrow); otherwise only the tenant's counts.
	cohort bool
	checks []Check
	reason string
	// byClass holds checks with another class's check in front: jobs of
	// one shape and several classes share them. A cycle knows a handful
	// of classes, so a scan beats a map.
	byClass [][]Check
}

// withClass returns the memoised checks with class in front.
func (m *memoEntry) withClass(class Check) []Check {
	if m.checks[0].Detail == class.Detail {
		return m.checks
	}
	for _, c := range m.byClass {
		if c[0].Detail == class.Detail {
			return c
		}
	}
	c := append([]Check{class}, m.checks[1:]...)
	m.byClass = append(m.byClass, c)
	return c
}

// memoChecks runs the checks of e's job, reusing the outcome of an equal
// job of the same tenant when nothing it depends on changed.
func (cy *cycle) memoChecks(e *queueEntry, acct *account) ([]Check, string, bool) {
	j := e.j
	class := cy.checkClass(j, acct)
	if !class.OK {
		return []Check{class}, class.Name + ": " + class.Text(), false
	}
	if j.MaxRuntimeErr != "" {
		c := runtimeMalformed(j)
		return []Check{class, c}, c.Name + ": " + c.Detail, false
	}
	// The other checks do not depend on the class: jobs of one tenant and
	// shape share their outcome whatever their class. Behind a
	// reservation the outcome depends on the run time too.
	key := memoKey{tenantShape{j.Namespace, e.shape}, cy.cfg.RuntimeOf(j)}
	if m, ok := cy.memo[key]; ok && m.acctVer == acct.version && m.starveVer == cy.starveVer &&
		(!m.cohort || m.cohortVer == acct.cohort.version) {
		return m.withClass(class), m.reason, false
	}
	checks := cy.checksOf(e, acct)
	failed := firstFailed(checks)
	if failed == nil {
		return checks, "", true
	}
	reason := failed.Name + ": " + failed.Text()
	cy.memo[key] = &memoEntry{acctVer: acct.version, cohortVer: acct.cohort.version, starveVer: cy.starveVer,
		cohort: borrows(checks), checks: checks, reason: reason}
	return checks, reason, false
}

// checks runs the admission checks of queued job j in order, stopping at
// the first failure, and reserves usage and capacity when all pass.
func (cy *cycle) checks(j *Job, acct *account) []Check {
	missing := cy.missing(j)
	return cy.checksOf(&queueEntry{j: j, missing: missing, shape: shapeKey(j, missing)}, acct)
}

// checksOf is checks for a queue entry, whose missing allocations and
// shape key are computed.
func (cy *cycle) checksOf(e *queueEntry, acct *account) []Check {
	j, missing, shape := e.j, e.missing, e.shape
	class := cy.checkClass(j, acct)
	if !class.OK {
		return []Check{class}
	}
	if j.System && !cy.cfg.GovernSystemJobs {
		return []Check{class, systemRefused()}
	}
	if j.MaxRuntimeErr != "" {
		return []Check{class, runtimeMalformed(j)}
	}
	base := e.request()
	checks := make([]Check, 3, 4) // room for the fit or order check
	checks[0], checks[1], checks[2] = class, acct.checkLimit(base), acct.checkQuota(base)
	if !checks[1].OK || !checks[2].OK {
		return trim(checks)
	}
	if held := cy.checkBorrowHold(j, acct, checks[2]); held != nil {
		return append(checks, *held)
	}
	var fit fitResult
	if r := cy.reserved[j.Pool()]; r != nil && r.head != j {
		order, bf := cy.checkBackfill(j, missing, shape, r)
		checks = append(checks, order)
		if !order.OK {
			return checks
		}
		if bf != nil {
			fit = *bf
		}
	}
	if fit.takes == nil {
		fit = cy.cap.fitKeyed(j, missing, shape)
	}
	if !fit.ok {
		if never := cy.neverFits(j, missing, shape); never != nil {
			return append(checks, *never)
		}
		cy.markStarving(j, missing)
		return append(checks, Check{Name: "fit", Detail: fit.detail})
	}
	full := withModels(j, missing, fit.models)
	checks[1], checks[2] = acct.checkLimit(full), acct.checkQuota(full)
	if !checks[1].OK || !checks[2].OK {
		cy.cap.undo(fit.takes)
		return trim(checks)
	}
	acct.use(full)
	cy.last = admission{takes: fit.takes, use: full}
	if cy.onAdmit != nil {
		cy.onAdmit(j, fit.takes)
	}
	return append(checks, Check{Name: "fit", OK: true, Detail: fmt.Sprintf("all %d allocations fit on free capacity", len(fit.takes))})
}

// checkClass checks that the job's class exists and the tenant may use it.
// The outcome depends on the tenant and the class only: it is kept per
// account.
func (cy *cycle) checkClass(j *Job, acct *account) Check {
	name := cy.className(j)
	if c, ok := acct.classChecks[name]; ok {
		return c
	}
	c := cy.judgeClass(acct, name)
	if acct.classChecks == nil {
		acct.classChecks = map[string]Check{}
	}
	acct.classChecks[name] = c
	return c
}

// judgeClass is checkClass without the cache.
func (cy *cycle) judgeClass(acct *account, name string) Check {
	cl, ok := cy.cfg.Classes[name]
	switch {
	case !ok:
		return Check{Name: "class", Detail: fmt.Sprintf("unknown class %q (known: %s)", name, strings.Join(cy.classNames(), ", "))}
	case !acct.t.MayUse(name, cl.Restricted):
		return Check{Name: "class", Detail: fmt.Sprintf("tenant %s may not use class %q", acct.t.Namespace, name)}
	}
	return Check{Name: "class", OK: true, Detail: "class " + name + " (priority " + strconv.Itoa(cl.Priority) + ")"}
}

func (cy *cycle) classNames() []string {
	var names []string
	for n := range cy.cfg.Classes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// neverFits returns the failing fit check of a job that would not fit
// its node pool even with every node empty (constraints or shape no node
// meets); nil when it could fit and only waits for free capacity. Such a
// job never becomes a starving head: it would block its pool for ever
// (audit #8).
func (cy *cycle) neverFits(j *Job, missing []int, shape string) *Check {
	c, known := cy.never[shape]
	if !known {
		if detail, never := cy.cap.neverFits(j, missing); never {
			c = &Check{Name: "fit", Permanent: true, Detail: "never fits node pool " + j.Pool() + ": " + detail}
		}
		cy.never[shape] = c
	}
	return c
}

// markStarving records j as its pool's starving head when it has waited
// longer than the starvation timeout, with its reservation (reserve.go):
// later jobs of the pool may then only start beside the reservation.
func (cy *cycle) markStarving(j *Job, missing []int) {
	pool := j.Pool()
	if cy.starving[pool] == nil && cy.s.Now.Sub(j.QueuedAt) > cy.cfg.StarvationTimeout {
		cy.setStarving(j, cy.reserveFor(j, missing))
	}
}

// setStarving makes j its pool's starving head with reservation r.
func (cy *cycle) setStarving(j *Job, r *reservation) {
	pool := j.Pool()
	cy.starving[pool] = j
	cy.reserved[pool] = r
	if cy.onStarve != nil {
		cy.onStarve(j, r)
	}
	keep := cy.plan.Reservations[:0]
	for _, rv := range cy.plan.Reservations {
		if rv.Pool != pool {
			keep = append(keep, rv)
		}
	}
	cy.plan.Reservations = append(keep, Reservation{Job: j.Key(), Pool: pool, Start: r.Start, Nodes: r.Nodes})
	cy.starveVer++
}

// trim cuts checks after the first failure.
func trim(checks []Check) []Check {
	for i, c := range checks {
		if !c.OK {
			return checks[:i+1]
		}
	}
	return checks
}

// noteWaiting counts queued job j in its pool's Plan.Waiting when it
// waits for capacity: its first failing check is fit, quota or order and
// could pass once capacity frees (not a job that fits no node, nor one
// held by its limit, back-off, class or run time).
func (cy *cycle) noteWaiting(j *Job, v *Verdict) {
	if !WaitsForCapacity(v.Checks) {
		return
	}
	if cy.plan.Waiting == nil {
		cy.plan.Waiting = map[string]PoolWait{}
	}
	w := cy.plan.Waiting[j.Pool()]
	if w.Count == 0 {
		w.First = j.Key()
	}
	w.Count++
	cy.plan.Waiting[j.Pool()] = w
}

// WaitsForCapacity tells whether a held job's checks say it waits for
// capacity: its first failing check is fit, quota or order and could pass
// once capacity frees.
func WaitsForCapacity(checks []Check) bool {
	c := firstFailed(checks)
	return c != nil && !c.Permanent && (c.Name == "fit" || c.Name == "quota" || c.Name == "order")
}

func firstFailed(checks []Check) *Check {
	for i := range checks {
		if !checks[i].OK {
			return &checks[i]
		}
	}
	return nil
}

func admitReason(checks []Check) string {
	var parts []string
	for _, c := range checks {
		parts = append(parts, c.Name+": "+c.Text())
	}
	return "admitted (" + strings.Join(parts, "; ") + ")"
}

// borrows tells whether a quota check needed the cohort's capacity.
func borrows(checks []Check) bool {
	for _, c := range checks {
		if c.Name != "quota" {
			continue
		}
		for _, a := range c.Amounts {
			if a.Borrowable >= 0 {
				return true
			}
		}
	}
	return false
}

// runtimeMalformed is the failing check of a job whose allot.max-runtime
// could not be read.
func runtimeMalformed(j *Job) Check {
	return Check{Name: "runtime", Permanent: true, Detail: "allot.max-runtime " + j.MaxRuntimeErr + "; fix it and submit the job again"}
}
