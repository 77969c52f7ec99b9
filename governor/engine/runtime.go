package engine

import (
	"fmt"
	"time"
)

// CauseMaxRuntime is the cause of a Stop for a job that ran longer than
// its allot.max-runtime.
const CauseMaxRuntime = "max-runtime"

// enforceRuntime stops governed jobs that have run longer than their
// allot.max-runtime since their first live allocation started (Stop:
// the actuator deregisters the job, and the ckpt driver asks each task to
// checkpoint before it is killed). Reservations count on that limit, so
// it is kept; the job's allocations stay counted until Nomad stops them.
func (cy *cycle) enforceRuntime(jobs []*Job) {
	for _, j := range jobs {
		if j.MaxRuntime <= 0 || j.Dead || (j.State != Admitted && j.State != Direct) ||
			cy.accts[j.Namespace] == nil || cy.held[j.Key()] || cy.pre.requeued[j.Key()] {
			continue
		}
		start, ok := cy.runningSince(j)
		if !ok {
			continue
		}
		ran := cy.s.Now.Sub(start)
		if ran <= j.MaxRuntime {
			continue
		}
		check := Check{Name: "runtime", Permanent: true, Detail: fmt.Sprintf("ran %s, longer than its allot.max-runtime %s",
			ran.Round(time.Second), j.MaxRuntime)}
		cy.stop(j, "stopped with a checkpoint: "+check.Detail, []Check{check})
		d := &cy.plan.Decisions[len(cy.plan.Decisions)-1]
		d.Cause = CauseMaxRuntime
	}
}

// runningSince is when the earliest live, started allocation of j
// started; ok false when none runs.
func (cy *cycle) runningSince(j *Job) (time.Time, bool) {
	var first time.Time
	for _, a := range cy.byJob[idOf(j)] {
		if a.Live && a.Started && !a.StartedAt.IsZero() && (first.IsZero() || a.StartedAt.Before(first)) {
			first = a.StartedAt
		}
	}
	return first, !first.IsZero()
}
