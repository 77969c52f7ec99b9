package engine

import (
	"fmt"
	"sort"

	"github.com/allot-sh/allot/governor/quota"
)

// cycle holds the working state of one Decide call.
type cycle struct {
	cfg      Config
	s        *Snapshot
	plan     *Plan
	cap      *capacity
	accts    map[string]*account
	byJob    map[jobID][]*Alloc
	starving map[string]*Job // node pool → starving queue head
	// reserved holds the starving heads' reservations by node pool.
	reserved map[string]*reservation
	// borrowHolds holds each cohort's borrow hold (borrowhold.go).
	borrowHolds map[*cohort]*borrowHold
	// starvedHeads marks the cohorts' starved heads (borrowhold.go).
	starvedHeads map[*Job]bool
	// byID indexes the snapshot's jobs by namespace and ID (built on
	// first use).
	byID map[jobID]*Job
	// cluster is clusterVector's result (built on first use): the
	// snapshot's nodes do not change within a cycle.
	cluster quota.Vector
	// starveVer counts changes of starving; memo holds failed checks.
	starveVer uint64
	memo      map[memoKey]*memoEntry
	// keyBuf is where shape keys are built for lookups; shapes interns
	// them (shapeOf).
	keyBuf []byte
	shapes map[string]string
	// last is what the latest successful checks reserved.
	last admission
	// jobs are the snapshot's jobs by namespace and ID.
	jobs []*Job
	// pre is the preemption state of the cycle (preempt.go).
	pre preemptState
	// replaced marks live allocations an update replaces: their usage and
	// capacity are already released (placement.go).
	replaced map[string]bool
	// held marks jobs this plan holds or stops before the admission walk
	// (direct system jobs, dispatched children over a limit).
	held map[string]bool
	// never memoises, by shape key, the failing check of shapes that fit
	// no node of their pool even empty (nil: they could fit).
	never map[string]*Check
	// ints is a slab the per-job counts of a cycle are cut from;
	// verdicts one the verdicts are.
	ints     []int
	verdicts []Verdict
	// unpins are the pinned admitted jobs blocked in Nomad (pin.go).
	unpins []*Job
	// onAdmit and onStarve, when set (tests), see every admission with
	// its takes and every reservation as it is made.
	onAdmit  func(j *Job, takes []take)
	onStarve func(j *Job, r *reservation)
}

// Decide runs one admission cycle over snapshot s. It is pure and
// deterministic: the same snapshot always gives the same plan.
//
// Steps, in order: account what runs and what admitted jobs still need
// (reserving their capacity), hold jobs registered straight to Nomad that
// push their tenant over a limit, order the queue, then admit queued jobs
// one by one while every check passes.
func Decide(cfg Config, s *Snapshot) *Plan {
	cy := newCycle(cfg, s)
	jobs := sortedJobs(s.Jobs)
	cy.jobs = jobs
	cy.prepare(jobs)
	cy.admitQueue(cy.queue(jobs))
	cy.decideUnpins()
	cy.finish()
	cy.planClaims()
	cy.planTaken()
	cy.planMoveHolds()
	cy.plan.Starving = map[string]string{}
	for pool, j := range cy.starving {
		cy.plan.Starving[pool] = j.Key()
	}
	return cy.plan
}

// admission is what the latest successful checks reserved.
type admission struct {
	takes []take
	use   quota.Vector
}

func newCycle(cfg Config, s *Snapshot) *cycle {
	cy := &cycle{
		cfg:      cfg,
		s:        s,
		plan:     &Plan{Now: s.Now, Verdicts: make(map[string]*Verdict, len(s.Jobs))},
		cap:      newCapacity(s.Nodes, s.Allocs, newMatcher()),
		accts:    newAccounts(s.Tenants),
		byJob:    make(map[jobID][]*Alloc, len(s.Allocs)),
		starving: map[string]*Job{},
		reserved: map[string]*reservation{},
		memo:     map[memoKey]*memoEntry{},
		pre:      newPreemptState(),
		replaced: map[string]bool{},
		held:     map[string]bool{},
		never:    map[string]*Check{},
		shapes:   map[string]string{},
	}
	cy.cap.placedOn = cy.placedOn
	for _, a := range s.Allocs {
		id := jobID{a.Namespace, a.JobID}
		cy.byJob[id] = append(cy.byJob[id], a)
		if acct := cy.accts[a.Namespace]; acct != nil && a.Live {
			acct.add(allocVector(a))
		}
	}
	return cy
}

// prepare accounts what runs: reservations of admitted and direct jobs,
// holds of direct jobs over a limit, and the tenants' shares.
func (cy *cycle) prepare(jobs []*Job) {
	cy.gangTimeouts(jobs)
	cy.enforceRuntime(jobs)
	cy.holdDirectSystem(jobs)
	cy.reserveRunning(jobs)
	cy.holdDirectOverLimit(jobs)
	cy.shares()
}

// sortedJobs returns the jobs ordered by namespace and ID.
func sortedJobs(in []*Job) []*Job {
	jobs := append(byKey(nil), in...)
	sort.Sort(jobs)
	return jobs
}

// byKey sorts jobs by namespace, then ID (typed: no reflection in swaps).
type byKey []*Job

func (b byKey) Len() int           { return len(b) }
func (b byKey) Less(i, j int) bool { return jobLess(b[i], b[j]) }
func (b byKey) Swap(i, j int)      { b[i], b[j] = b[j], b[i] }

// jobLess orders jobs by namespace, then ID.
func jobLess(a, b *Job) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.ID < b.ID
}

// reserveRunning reserves, in tenant usage and in free capacity, what
// admitted and direct jobs still need to place.
func (cy *cycle) reserveRunning(jobs []*Job) {
	for _, j := range jobs {
		if (j.State != Admitted && j.State != Direct) || cy.pre.requeued[j.Key()] || cy.held[j.Key()] {
			continue
		}
		p := cy.placementOf(j)
		cy.releaseReplaced(j, p.replaced)
		missing := p.missing
		fit := cy.cap.fit(j, missing)
		if acct := cy.accts[j.Namespace]; acct != nil {
			req := requestVector(j, missing)
			if fit.ok {
				req = withModels(j, missing, fit.models)
			}
			acct.add(req)
		}
		if v := cy.verdict(j); v != nil {
			v.Reason = cy.runningReason(j, missing)
		}
		cy.unpinBlocked(j)
	}
}

// runningReason says where an admitted or direct job stands in Nomad:
// running, waiting for Nomad to place allocations, or blocked in Nomad
// (a blocked evaluation: Nomad found no room). Its reservation holds
// either way.
func (cy *cycle) runningReason(j *Job, missing []int) string {
	n, want := 0, 0
	for i, m := range missing {
		n = satAdd(n, m)
		want = satAdd(want, cy.want(j, i))
	}
	switch {
	case n == 0:
		return j.State.String() + ": running under Nomad"
	case j.Blocked:
		return fmt.Sprintf("%s, but blocked in Nomad: %d of %d allocations not placed, Nomad's scheduler found no room for them and waits for capacity (their resources stay reserved)",
			j.State, n, want)
	}
	return fmt.Sprintf("%s: waiting for Nomad to place %d of %d allocations (their resources are reserved)", j.State, n, want)
}

// holdDirectOverLimit holds jobs registered straight to Nomad, newest
// first, while their tenant is over a hard limit. A dispatched child,
// which Nomad 1.6.1 cannot hold, is stopped instead (audit #23).
func (cy *cycle) holdDirectOverLimit(jobs []*Job) {
	direct := make([]*Job, 0)
	for _, j := range jobs {
		if j.State == Direct && !cy.held[j.Key()] && cy.accts[j.Namespace] != nil {
			direct = append(direct, j)
		}
	}
	sort.SliceStable(direct, func(a, b int) bool { return direct[a].SubmittedAt.After(direct[b].SubmittedAt) })
	for _, j := range direct {
		acct := cy.accts[j.Namespace]
		use := cy.jobUsage(j)
		over := acct.overLimit(use)
		if over == nil {
			continue
		}
		acct.sub(use)
		if j.Dispatched {
			cy.stop(j, "dispatched child over the tenant's limit, stopped (Nomad cannot hold a dispatched job): "+over.Text(), []Check{*over})
			continue
		}
		reason := "registered straight to Nomad over the tenant's limit: " + over.Text()
		cy.decide(j, Hold, reason)
		v := cy.verdict(j)
		v.State, v.Reason, v.Checks = Queued, reason, []Check{*over}
	}
}

// stop decides to stop job j for good (a dispatched child: Nomad cannot
// hold it) and marks it so the rest of the cycle treats it as gone.
func (cy *cycle) stop(j *Job, reason string, checks []Check) {
	cy.held[j.Key()] = true
	cy.decide(j, Stop, reason)
	if v := cy.verdict(j); v != nil {
		v.State, v.Reason, v.Checks = Stopped, reason, checks
	}
}

// jobUsage is what job j holds in its tenant's usage: its live
// allocations plus the reservation for what it has not placed.
func (cy *cycle) jobUsage(j *Job) quota.Vector {
	use := requestVector(j, cy.missing(j))
	for _, a := range cy.byJob[idOf(j)] {
		if a.Live && !cy.replaced[a.ID] {
			use.Add(allocVector(a))
		}
	}
	return use
}

// overLimit returns the failing limit check when the tenant's usage
// exceeds a limit in a resource that use contributes to.
func (a *account) overLimit(use quota.Vector) *Check {
	contrib := quota.Vector{}
	for r, n := range use {
		if lim, ok := a.t.Limit[r]; ok && n > 0 && a.usage[r] > lim {
			contrib[r] = n
		}
	}
	if len(contrib) == 0 {
		return nil
	}
	a.sub(contrib)
	c := a.checkLimit(contrib)
	a.add(contrib)
	return &c
}

// shares computes every tenant's weighted dominant share.
func (cy *cycle) shares() {
	cluster := cy.clusterVector()
	for _, a := range cy.accts {
		a.computeShare(cluster)
	}
}

// clusterVector is the capacity of every node, by resource, computed
// once per cycle (fairness preemption asks for it per preemptor);
// callers only read it.
func (cy *cycle) clusterVector() quota.Vector {
	if cy.cluster != nil {
		return cy.cluster
	}
	cluster := quota.Vector{}
	for _, n := range cy.s.Nodes {
		cluster[quota.CPU] += n.CPU
		cluster[quota.Memory] += n.MemoryMB
		for i := range n.Devices {
			d := &n.Devices[i]
			cluster[d.ID()] += int64(d.Healthy)
			cluster[d.Type] += int64(d.Healthy)
		}
	}
	cy.cluster = cluster
	return cluster
}

// accountsSet returns the governed tenants' accounts.
func (cy *cycle) accountsSet() map[*account]bool {
	out := make(map[*account]bool, len(cy.accts))
	for _, a := range cy.accts {
		out[a] = true
	}
	return out
}

// decide appends a decision for job j.
func (cy *cycle) decide(j *Job, act Action, reason string) {
	class := cy.className(j)
	at := j.QueuedAt
	if at.IsZero() {
		at = cy.s.Now
	}
	cy.plan.Decisions = append(cy.plan.Decisions, Decision{
		Action: act, Namespace: j.Namespace, JobID: j.ID, Version: j.Version,
		Class: class, Priority: cy.cfg.Classes[class].Priority, QueuedAt: at, Reason: reason,
	})
}

// verdict returns (creating) the verdict of a governed job; nil for jobs
// of namespaces that are not governed.
func (cy *cycle) verdict(j *Job) *Verdict {
	if cy.accts[j.Namespace] == nil {
		return nil
	}
	return cy.verdictKeyed(j, j.Key())
}

// verdictKeyed is verdict for a governed job j whose key is known.
func (cy *cycle) verdictKeyed(j *Job, key string) *Verdict {
	v := cy.plan.Verdicts[key]
	if v == nil {
		v = cy.newVerdict()
		*v = Verdict{Namespace: j.Namespace, JobID: j.ID, Class: cy.className(j), State: j.State, QueuedAt: j.QueuedAt}
		cy.plan.Verdicts[key] = v
	}
	return v
}

// newVerdict returns a zero verdict cut from the cycle's slab: a plan
// holds a verdict per governed job, and one allocation per 1024 of them
// keeps queue walks cheap (as counts does for per-job counts). A small
// snapshot's slab holds no more verdicts than it has jobs (and one for a
// submission the proxy judges).
func (cy *cycle) newVerdict() *Verdict {
	if len(cy.verdicts) == 0 {
		cy.verdicts = make([]Verdict, minInt(1024, len(cy.s.Jobs)+1))
	}
	v := &cy.verdicts[0]
	cy.verdicts = cy.verdicts[1:]
	return v
}

// className is the job's class, or its tenant's default class.
func (cy *cycle) className(j *Job) string {
	if j.Class != "" {
		return j.Class
	}
	if a := cy.accts[j.Namespace]; a != nil && a.t.DefaultClass != "" {
		return a.t.DefaultClass
	}
	return quota.DefaultClassName
}

// finish fills the tenants' status.
func (cy *cycle) finish() {
	names := make([]string, 0, len(cy.accts))
	for ns := range cy.accts {
		names = append(names, ns)
	}
	sort.Strings(names)
	for _, ns := range names {
		a := cy.accts[ns]
		cy.plan.Tenants = append(cy.plan.Tenants, TenantStatus{Tenant: *a.t, Usage: a.usage, Queued: a.queued, DominantShare: a.share})
	}
}
