// Package reconcile runs the governor's decision loop: on every cluster
// change (or a period), snapshot → engine → actuator. It also serializes
// the proxy's admissions with the loop, so the same capacity is never
// promised twice.
package reconcile

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/metrics"
)

// Reconciler is the decision loop.
type Reconciler struct {
	Store    *cluster.Store
	Actuator *actuate.Actuator
	Config   engine.Config
	Metrics  *metrics.Metrics
	Log      hclog.Logger
	Now      func() time.Time
	// Interval is the longest time between two cycles.
	Interval time.Duration
	// MinGap is the shortest time between two cycles: bursts of events
	// (a submission makes several) share one cycle. A slow cycle (a long
	// queue) stretches the gap after it (gapAfter).
	MinGap time.Duration
	// Journal records applied preemptions, requeues and holds (GET
	// /allot/v1/decisions).
	Journal Journal

	// cycleMu serializes cycles; mu serializes a cycle's decision with
	// proxy admissions (not its writes to Nomad: the plan's admissions
	// are reserved in the store first, see Cycle).
	cycleMu sync.Mutex
	mu      sync.Mutex
	// baseMu guards base, baseGen and baseAt (taken after mu when both
	// are: a submission that will be held decides without mu).
	baseMu sync.Mutex
	// base is the accounted state proxy admissions are decided against,
	// valid while the store's Gen is baseGen and for at most baseTTL.
	base    *engine.Base
	baseGen uint64
	baseAt  time.Time
	latest  *engine.Plan
	// decided is how long the last cycle took to decide (under mu).
	decided time.Duration
	// merged is latest with the provisional decisions (nil: not built).
	merged *engine.Plan
	prov   provisional
	// pos indexes latest's queue for positions (built on first use).
	pos  *engine.Positions
	plMu sync.RWMutex
	// claims is the last plan's Plan.Claims, the next snapshot's
	// (under cycleMu): in memory, so a failover starts the claims'
	// clocks anew (docs/governor.md, reclaim).
	claims map[string]time.Time
	// taken is the last plan's Plan.Taken, the next snapshot's (under
	// cycleMu): in memory too, so after a failover the take-back rule
	// reads the jobs' allot.preempted-by alone for 5 minutes.
	taken map[string]map[string]time.Time
	// moveHolds is the last plan's Plan.MoveHolds, the next snapshot's
	// (under cycleMu, in memory).
	moveHolds map[string]engine.MoveHold
}

// Run cycles on every store change and at least every Interval, until ctx
// ends; changes within the gap after a cycle (gapAfter) are batched into
// the next one. Cycles start once the store holds a full listing.
func (r *Reconciler) Run(ctx context.Context) {
	tick := time.NewTicker(r.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.Store.Changed():
		case <-tick.C:
		}
		var took time.Duration
		if r.Store.Ready() {
			r.Cycle(ctx)
			took = r.lastDecide()
		}
		if r.MinGap > 0 {
			gap := time.NewTimer(r.gapAfter(took))
			select {
			case <-ctx.Done():
				gap.Stop()
				return
			case <-gap.C:
			}
		}
	}
}

// Cycle decides and applies once, and returns the plan.
//
// The admission lock is held while the cycle decides, not while it
// writes to Nomad: before letting go it reserves its admissions in the
// store (as the proxy does for its own), so proxy admissions meanwhile
// are decided against capacity that already counts them; admissions
// Nomad did not take are given back after the writes.
func (r *Reconciler) Cycle(ctx context.Context) *engine.Plan {
	r.cycleMu.Lock()
	defer r.cycleMu.Unlock()
	r.mu.Lock()
	start := time.Now()
	snap := r.Store.Snapshot(r.Now())
	held := contain(r.Config, snap)
	snap.Claims, snap.Taken, snap.MoveHolds = r.claims, r.taken, r.moveHolds
	plan := engine.Decide(r.Config, snap)
	r.claims, r.taken, r.moveHolds = plan.Claims, plan.Taken, plan.MoveHolds
	withContained(plan, held)
	r.observeCycle(time.Since(start), plan)
	pending := r.reserveAdmits(snap, plan)
	r.mu.Unlock()
	res := r.Actuator.Apply(ctx, plan)
	r.mu.Lock()
	r.releaseUnapplied(pending, res)
	r.mu.Unlock()
	r.observeResult(plan, res)
	r.Journal.Add(records(plan, res)...)
	r.setLatest(plan, snap)
	return plan
}

// cycleShare bounds the decision loop's share of a core: the gap after a
// cycle is at least cycleShare times as long as the cycle took to decide,
// so cycles over a queue of thousands of held jobs, triggered by every
// submission of a burst, take at most about 1/(cycleShare+1) of a core
// and of the admission lock (docs/benchmarks.md, proxy throughput).
const cycleShare = 9

// gapAfter is the pause after a cycle that took took to decide: MinGap,
// or cycleShare × took when longer, but never more than Interval (a cycle
// runs at least that often anyway).
func (r *Reconciler) gapAfter(took time.Duration) time.Duration {
	gap := cycleShare * took
	if gap < r.MinGap {
		gap = r.MinGap
	}
	if r.Interval > 0 && gap > r.Interval {
		gap = r.Interval
	}
	return gap
}

func (r *Reconciler) lastDecide() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.decided
}

func (r *Reconciler) observeCycle(d time.Duration, plan *engine.Plan) {
	r.decided = d
	if r.Metrics == nil {
		return
	}
	r.Metrics.CycleSeconds.Observe(d.Seconds())
	r.Metrics.ObservePlan(plan)
}

func (r *Reconciler) observeResult(plan *engine.Plan, res actuate.Result) {
	if r.Metrics == nil {
		return
	}
	r.Metrics.Conflicts.Add(float64(res.Conflicts))
	r.Metrics.ActuateErrors.Add(float64(len(res.Errors)))
	for _, d := range res.Applied {
		switch d.Action {
		case engine.Admit:
			r.Metrics.AdmittedTotal.WithLabelValues(d.Namespace, "queue").Inc()
			r.Metrics.AdmissionWait.WithLabelValues(d.Namespace).Observe(plan.Now.Sub(d.QueuedAt).Seconds())
		case engine.Hold:
			r.Metrics.HeldTotal.WithLabelValues(d.Namespace, "direct").Inc()
		case engine.Requeue:
			r.observeRequeue(d)
		case engine.Unpin:
			r.Metrics.Unpinned.WithLabelValues(d.Namespace).Inc()
		case engine.Stop:
			r.Metrics.Stopped.WithLabelValues(d.Namespace, stopReason(d)).Inc()
		}
	}
}

// stopReason is the reason label of allot_stopped_jobs_total for an
// applied Stop, one of a fixed set whatever the decision carries:
// max-runtime (ran past its allot.max-runtime), over-limit (a dispatched
// child over its tenant's limit), class or priority (a dispatched child
// written straight to Nomad breaking its class rules: contain.go),
// preemption (a dispatched child chosen as a preemption victim; the
// preemption's own cause is in the decisions journal), else other.
func stopReason(d engine.Decision) string {
	switch {
	case d.Preemptor != "":
		return "preemption"
	case d.Cause == "":
		return "over-limit"
	case d.Cause == engine.CauseMaxRuntime, d.Cause == CauseClass, d.Cause == CausePriority:
		return d.Cause
	}
	return "other"
}

// observeRequeue counts an applied requeue: a preemption victim with the
// work it lost, or a gang timeout.
func (r *Reconciler) observeRequeue(d engine.Decision) {
	if d.Cause == engine.CauseGangTimeout {
		r.Metrics.HeldTotal.WithLabelValues(d.Namespace, "gang-timeout").Inc()
		return
	}
	r.Metrics.Preemptions.WithLabelValues(d.Cause).Inc()
	r.Metrics.LostWork.Add(d.LostWork.Seconds())
}

func (r *Reconciler) setLatest(p *engine.Plan, snap *engine.Snapshot) {
	r.plMu.Lock()
	r.latest = p
	r.merged, r.pos = nil, nil
	r.prov.settle(snap, r.Now())
	r.plMu.Unlock()
}

// Latest returns the plan of the last cycle (nil before the first), with
// what the proxy decided since (provisional.go): a job it held is in the
// queue, a job it admitted in its tenant's usage.
func (r *Reconciler) Latest() *engine.Plan {
	r.plMu.RLock()
	p, m := r.latest, r.merged
	r.plMu.RUnlock()
	if p == nil || r.prov.empty() || m != nil {
		if m != nil {
			return m
		}
		return p
	}
	r.plMu.Lock()
	defer r.plMu.Unlock()
	if r.merged == nil && r.latest != nil {
		r.merged = r.prov.merge(r.latest)
	}
	if r.merged == nil {
		return r.latest
	}
	return r.merged
}

// planned returns the last cycle's plan without the proxy's decisions
// since: verdictOf reads only its starving heads and reservations, which
// the merge (Latest) leaves as they are, and merging on every admission
// would copy the whole queue each time.
func (r *Reconciler) planned() *engine.Plan {
	r.plMu.RLock()
	defer r.plMu.RUnlock()
	return r.latest
}

// Verdict is the outcome of a proxy admission.
type Verdict struct {
	Admitted bool
	// Position and TenantPosition are the queue positions of a queued job,
	// Total the queue length.
	Position, TenantPosition, Total int
	Reason                          string
	Class                           string
	Priority                        int
	// Checks are the engine's admission checks behind Reason (job why
	// shows them for a job the proxy just held).
	Checks []engine.Check
	// Nodes is the placement pin of an admitted job (engine.Verdict.Nodes:
	// per group, the nodes the engine's fit packed it onto); the proxy's
	// admitting write carries it. Empty for a queued job or no pin.
	Nodes map[string][]string
}

// Reserve decides about a job submitted through the proxy. When it is
// admitted, the store records it as admitted at once, under the same lock
// as cycles, so the capacity it is given cannot be given again while the
// proxy writes it to Nomad; undo gives that back when Nomad refuses the
// write. Nothing is reserved for a queued job (undo does nothing).
//
// The decision is a cycle over what runs plus this job alone: held jobs
// hold nothing, and the latest cycle already found that they do not fit
// (smaller jobs may pass them), so only a starving head of the job's node
// pool, from the latest plan, stops the job. Its queue position comes from
// the latest plan too. A submission's cost is thus independent of the
// queue's length.
//
// While a cycle decides (it holds the admission lock), a submission that
// will be held does not wait for it: it is decided without the lock and
// without reserving anything, since a held job promises no capacity. One
// that would be admitted waits for the lock and is decided again under it.
func (r *Reconciler) Reserve(j *engine.Job) (Verdict, func()) {
	if !r.mu.TryLock() {
		r.baseMu.Lock()
		v := r.evaluate(j, false)
		r.baseMu.Unlock()
		if !v.Admitted {
			return r.held(j, v)
		}
		r.mu.Lock()
	}
	defer r.mu.Unlock()
	// baseMu from the decision to the reservation: a base rebuilt between
	// them would lack this job's usage yet pass for holding it.
	r.baseMu.Lock()
	v := r.evaluate(j, true)
	if !v.Admitted {
		r.baseMu.Unlock()
		return r.held(j, v)
	}
	r.addProvisional(j, v)
	held := *j
	held.State, held.Pinned = engine.Admitted, len(v.Nodes) > 0
	gen := r.Store.Gen()
	prev := r.Store.PutEngineJob(&held)
	if r.base != nil && r.Store.Gen() == gen+1 {
		r.baseGen = gen + 1 // the base already holds this job's usage
	} else {
		r.base = nil // something else changed meanwhile
	}
	r.baseMu.Unlock()
	return v, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.dropBase()
		r.Store.RestoreEngineJob(held.Key(), prev)
		r.dropProvisional(held.Key())
	}
}

// held records the proxy's hold of j (nothing reserved; undo forgets it).
func (r *Reconciler) held(j *engine.Job, v Verdict) (Verdict, func()) {
	r.addProvisional(j, v)
	key := j.Key()
	return v, func() { r.dropProvisional(key) }
}

// dropBase makes the next admission rebuild its accounted base.
func (r *Reconciler) dropBase() {
	r.baseMu.Lock()
	r.base = nil
	r.baseMu.Unlock()
}

// Evaluate decides about a job like Reserve but reserves nothing (plan
// previews).
func (r *Reconciler) Evaluate(j *engine.Job) Verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.baseMu.Lock()
	defer r.baseMu.Unlock()
	return r.evaluate(j, false)
}

// baseTTL bounds how long an accounted base is reused: the clock matters
// to the engine only through queue times, but a bound keeps it honest.
const baseTTL = time.Second

// evaluate decides j against the cached base, rebuilding it when the
// store changed; with commit an admitted job stays in the base (baseMu
// held). An update
// of a job that is not held is decided against a one-off base without the
// job's old version, and the cache is dropped.
func (r *Reconciler) evaluate(j *engine.Job, commit bool) Verdict {
	now := r.Now()
	if j.QueuedAt.IsZero() {
		j.QueuedAt = now
	}
	j.State = engine.Queued
	if old, ok := r.Store.Job(j.Namespace, j.ID); ok && old.State != engine.Queued {
		r.base = nil
		snap := r.Store.Snapshot(now)
		jobs := snap.Jobs[:0:0]
		for _, o := range snap.Jobs {
			if o.Key() != j.Key() {
				jobs = append(jobs, o)
			}
		}
		snap.Jobs = jobs
		return r.verdictOf(engine.Prepare(r.Config, snap).Decide(j, false), j, true)
	}
	if gen := r.Store.Gen(); r.base == nil || gen != r.baseGen || now.Sub(r.baseAt) > baseTTL {
		r.base, r.baseGen, r.baseAt = engine.Prepare(r.Config, r.Store.Snapshot(now)), gen, now
	}
	pv := r.base.Decide(j, commit)
	v := r.verdictOf(pv, j, false)
	if commit && pv.State == engine.Admitted && !v.Admitted {
		r.base = nil // it kept the usage of a job a starving head holds back
	}
	return v
}

// verdictOf turns the base's verdict into the proxy's, with what the
// latest plan and the proxy's holds since hold back (heldBack).
// heldBack tells why j, which the base admitted with checks, is left to
// the next cycle: the latest plan's starving head or jobs waiting for
// capacity (engine Plan.HeldBackBy), its cohort's borrow hold when j
// borrows (Plan.BorrowHeldBy), or jobs the proxy held since that plan
// for capacity (heldSinceAhead). For an update of an admitted job only
// its pool's starving head: it takes no new place in the queue, and a
// refused update would be the user's to retry. "" when nothing does.
func (r *Reconciler) heldBack(j *engine.Job, checks []engine.Check, update bool) string {
	latest, now := r.planned(), r.Now()
	switch {
	case update && latest != nil:
		return latest.HeadAhead(r.Config, j, now)
	case update:
		return ""
	case latest != nil:
		if why := latest.HeldBackBy(r.Config, j, now); why != "" {
			return why
		}
		if why := latest.BorrowHeldBy(r.Config, j, checks, now); why != "" {
			return why
		}
	}
	return r.heldSinceAhead(j)
}

func (r *Reconciler) verdictOf(pv engine.Verdict, j *engine.Job, update bool) Verdict {
	v := Verdict{Reason: pv.Reason, Class: pv.Class, Admitted: pv.State == engine.Admitted, Checks: pv.Checks}
	if v.Admitted {
		if why := r.heldBack(j, pv.Checks, update); why != "" {
			v.Admitted, v.Reason = false, why
		}
	}
	if !v.Admitted {
		v.Position, v.TenantPosition, v.Total = r.position(j, v.Class)
	} else {
		v.Nodes = pv.Nodes
	}
	v.Priority = r.Config.Classes[v.Class].Priority
	return v
}
