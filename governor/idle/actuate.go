package idle

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/engine"
)

// CauseIdle is the cause of a Requeue the idle ladder decides.
const CauseIdle = "idle"

// Applier applies one engine decision (governor/actuate.Actuator).
type Applier interface {
	ApplyOne(ctx context.Context, d engine.Decision) (bool, error)
}

// JobInfo reads a job (for the version a decision is made against).
type JobInfo interface {
	Info(jobID string, q *api.QueryOptions) (*api.Job, *api.QueryMeta, error)
}

// ActuatorReclaimer reclaims through the governor's own requeue path: the
// actuator stops the job and queues it again with the jobmeta writers (a
// Requeue decision, as for a preemption victim), so Nomad stops its
// allocations, the ckpt driver checkpoints each task before it exits, and
// the job resumes from the checkpoint when it is admitted again.
// ActionStop deregisters the job without purge instead (engine.Stop).
type ActuatorReclaimer struct {
	Jobs    JobInfo
	Applier Applier
}

// Reclaim implements Reclaimer.
func (r ActuatorReclaimer) Reclaim(ctx context.Context, c Candidate, a Action) error {
	job, _, err := r.Jobs.Info(c.JobID, (&api.QueryOptions{Namespace: c.Namespace}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("reading job %s/%s: %w", c.Namespace, c.JobID, err)
	}
	if job.JobModifyIndex == nil {
		return fmt.Errorf("job %s/%s has no modify index", c.Namespace, c.JobID)
	}
	d := engine.Decision{Action: engine.Requeue, Namespace: c.Namespace, JobID: c.JobID, Version: *job.JobModifyIndex,
		Cause: CauseIdle, Class: c.Priority,
		Reason: fmt.Sprintf("%s since %s: reclaimed after the grace (warned %s)", c.Class,
			c.IdleSince.UTC().Format(time.RFC3339), c.WarnedAt.UTC().Format(time.RFC3339))}
	if job.Priority != nil {
		d.Priority = *job.Priority
	}
	if a == ActionStop {
		d.Action = engine.Stop
	}
	if _, err := r.Applier.ApplyOne(ctx, d); err != nil {
		return fmt.Errorf("applying %s to %s/%s: %w", d.Action, c.Namespace, c.JobID, err)
	}
	return nil
}
