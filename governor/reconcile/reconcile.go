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

	// mu serializes cycles and proxy admissions.
	mu     sync.Mutex
	latest *engine.Plan
	plMu   sync.RWMutex
}

// Run cycles on every store change and at least every Interval, until ctx
// ends. Cycles start once the store holds a full listing.
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
		if r.Store.Synced() {
			r.Cycle(ctx)
		}
	}
}

// Cycle decides and applies once, and returns the plan.
func (r *Reconciler) Cycle(ctx context.Context) *engine.Plan {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	plan := engine.Decide(r.Config, r.Store.Snapshot(r.Now()))
	r.observeCycle(time.Since(start), plan)
	res := r.Actuator.Apply(ctx, plan)
	r.observeResult(plan, res)
	r.setLatest(plan)
	return plan
}

func (r *Reconciler) observeCycle(d time.Duration, plan *engine.Plan) {
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
		}
	}
}

func (r *Reconciler) setLatest(p *engine.Plan) {
	r.plMu.Lock()
	r.latest = p
	r.plMu.Unlock()
}

// Latest returns the plan of the last cycle (nil before the first).
func (r *Reconciler) Latest() *engine.Plan {
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
}

// Admit decides about a job submitted through the proxy, as if it were
// queued now, and calls write with the verdict while no cycle runs, so the
// capacity it is given cannot be given again before the store knows the
// job. write returns an error when Nomad refused the job.
func (r *Reconciler) Admit(j *engine.Job, write func(Verdict) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.Now()
	snap := r.Store.Snapshot(now)
	if j.QueuedAt.IsZero() {
		j.QueuedAt = now
	}
	j.State = engine.Queued
	jobs := snap.Jobs[:0:0]
	for _, o := range snap.Jobs {
		if o.Key() != j.Key() {
			jobs = append(jobs, o)
		}
	}
	snap.Jobs = append(jobs, j)
	plan := engine.Decide(r.Config, snap)
	return write(verdictOf(plan, j, r.Config))
}

func verdictOf(plan *engine.Plan, j *engine.Job, cfg engine.Config) Verdict {
	v := Verdict{}
	if pv := plan.Verdicts[j.Key()]; pv != nil {
		v.Position, v.TenantPosition, v.Reason, v.Class = pv.Position, pv.TenantPosition, pv.Reason, pv.Class
	}
	v.Total = len(plan.Queue)
	if d, ok := plan.Decision(j.Namespace, j.ID); ok && d.Action == engine.Admit {
		v.Admitted, v.Reason, v.Class = true, d.Reason, d.Class
	}
	v.Priority = cfg.Classes[v.Class].Priority
	return v
}
