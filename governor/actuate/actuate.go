// Package actuate applies the engine's plans to Nomad: it holds and
// releases jobs with check-and-set writes (EnforceIndex) using the
// governor's own token, so a user's concurrent change is never
// overwritten.
package actuate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
)

// Sentinel outcomes of applying one decision.
var (
	// ErrConflict means the job changed since the decision was made; the
	// caller recomputes from fresh state.
	ErrConflict = errors.New("job changed since the decision")
	// ErrGone means the job no longer exists.
	ErrGone = errors.New("job no longer exists")
)

// Jobs is the part of the Nomad API the actuator uses.
type Jobs interface {
	Info(jobID string, q *api.QueryOptions) (*api.Job, *api.QueryMeta, error)
	RegisterOpts(job *api.Job, opts *api.RegisterOptions, q *api.WriteOptions) (*api.JobRegisterResponse, *api.WriteMeta, error)
}

// Actuator applies decisions.
type Actuator struct {
	Jobs Jobs
	// Store, when set, learns of every write at once.
	Store *cluster.Store
	Log   hclog.Logger
	Now   func() time.Time
}

// Result counts the outcome of applying a plan.
type Result struct {
	Applied   []engine.Decision
	Unchanged int
	Conflicts int
	Errors    []error
}

// Apply applies every decision of the plan; one failure does not stop the
// others.
func (a *Actuator) Apply(ctx context.Context, p *engine.Plan) Result {
	var res Result
	for _, d := range p.Decisions {
		if ctx.Err() != nil {
			res.Errors = append(res.Errors, ctx.Err())
			return res
		}
		changed, err := a.ApplyOne(ctx, d)
		switch {
		case errors.Is(err, ErrConflict):
			res.Conflicts++
			a.Log.Debug("decision conflicts with a newer job version, recomputing", "job", d.Namespace+"/"+d.JobID, "error", err)
		case errors.Is(err, ErrGone):
			a.Log.Debug("job gone before the decision was applied", "job", d.Namespace+"/"+d.JobID)
		case err != nil:
			res.Errors = append(res.Errors, err)
			a.Log.Error("applying decision", "action", d.Action, "job", d.Namespace+"/"+d.JobID, "error", err)
		case changed:
			res.Applied = append(res.Applied, d)
			a.Log.Info("applied decision", "action", d.Action, "job", d.Namespace+"/"+d.JobID, "reason", d.Reason)
		default:
			res.Unchanged++
		}
	}
	return res
}

// ApplyOne applies one decision and reports whether it wrote anything.
// Applying a decision twice is harmless: a job already in the wanted state
// is left alone.
func (a *Actuator) ApplyOne(ctx context.Context, d engine.Decision) (bool, error) {
	job, _, err := a.Jobs.Info(d.JobID, (&api.QueryOptions{Namespace: d.Namespace}).WithContext(ctx))
	if isNotFound(err) {
		if a.Store != nil {
			a.Store.DeleteJob(d.Namespace, d.JobID)
		}
		return false, ErrGone
	}
	if err != nil {
		return false, fmt.Errorf("reading job %s/%s: %w", d.Namespace, d.JobID, err)
	}
	state := cluster.JobState(job)
	if done(d.Action, state) {
		return false, nil
	}
	if *job.JobModifyIndex != d.Version || !applicable(d.Action, state) {
		return false, fmt.Errorf("%w: %s/%s is %s at index %d, decided %s at index %d",
			ErrConflict, d.Namespace, d.JobID, state, *job.JobModifyIndex, d.Action, d.Version)
	}
	a.mutate(job, d)
	if err := a.write(ctx, job, d); err != nil {
		return false, err
	}
	return true, nil
}

// done reports whether the job is already where the action would put it.
func done(act engine.Action, s engine.State) bool {
	switch act {
	case engine.Admit:
		return s == engine.Admitted
	case engine.Hold, engine.Requeue:
		return s == engine.Queued
	}
	return s != engine.Queued
}

// applicable reports whether the action may change a job in state s: only
// held jobs are admitted, and a job a user stopped is never touched.
func applicable(act engine.Action, s engine.State) bool {
	if act == engine.Hold || act == engine.Requeue {
		return s == engine.Direct || s == engine.Admitted
	}
	return s == engine.Queued
}

// mutate sets the job contract's fields for the decision.
func (a *Actuator) mutate(job *api.Job, d engine.Decision) {
	if job.Meta == nil {
		job.Meta = map[string]string{}
	}
	now := a.Now().UTC().Format(time.RFC3339Nano)
	prio := d.Priority
	if prio > 0 && d.Action != engine.Forget {
		job.Priority = &prio
	}
	switch d.Action {
	case engine.Admit:
		job.Stop = pointer(false)
		job.Meta[cluster.MetaState] = cluster.StateAdmitted
		job.Meta[cluster.MetaAdmittedAt] = now
	case engine.Forget:
		delete(job.Meta, cluster.MetaState)
		delete(job.Meta, cluster.MetaQueuedAt)
	case engine.Hold:
		job.Stop = pointer(true)
		job.Meta[cluster.MetaState] = cluster.StateQueued
		if _, ok := cluster.QueuedAt(job); !ok {
			job.Meta[cluster.MetaQueuedAt] = d.QueuedAt.UTC().Format(time.RFC3339Nano)
		}
		if _, ok := job.Meta[cluster.MetaRequeues]; !ok {
			job.Meta[cluster.MetaRequeues] = strconv.Itoa(0)
		}
	case engine.Requeue:
		requeue(job, d, now)
	}
}

// requeue stops a running job and queues it again: its original
// queued-at stays (it keeps its place), allot.requeues grows by one, and
// the time and preemptor are recorded for back-off and loop prevention.
func requeue(job *api.Job, d engine.Decision, now string) {
	job.Stop = pointer(true)
	job.Meta[cluster.MetaState] = cluster.StateQueued
	if _, ok := cluster.QueuedAt(job); !ok {
		job.Meta[cluster.MetaQueuedAt] = d.QueuedAt.UTC().Format(time.RFC3339Nano)
	}
	n, _ := strconv.Atoi(job.Meta[cluster.MetaRequeues]) // malformed counts as 0
	job.Meta[cluster.MetaRequeues] = strconv.Itoa(n + 1)
	job.Meta[cluster.MetaRequeuedAt] = now
	if d.Preemptor != "" {
		job.Meta[cluster.MetaPreemptedBy] = rememberPreemptor(job.Meta[cluster.MetaPreemptedBy], d.Preemptor)
	}
}

// preemptorsKept bounds how many preemptors allot.preempted-by remembers.
const preemptorsKept = 8

// rememberPreemptor appends key to the space-separated list, once, most
// recent last, keeping the newest preemptorsKept entries.
func rememberPreemptor(list, key string) string {
	var keep []string
	for _, k := range strings.Fields(list) {
		if k != key {
			keep = append(keep, k)
		}
	}
	keep = append(keep, key)
	if len(keep) > preemptorsKept {
		keep = keep[len(keep)-preemptorsKept:]
	}
	return strings.Join(keep, " ")
}

// write registers the job with EnforceIndex. A failed write is a conflict
// when the job's modify index moved meanwhile.
func (a *Actuator) write(ctx context.Context, job *api.Job, d engine.Decision) error {
	opts := &api.RegisterOptions{EnforceIndex: true, ModifyIndex: d.Version}
	resp, _, err := a.Jobs.RegisterOpts(job, opts, (&api.WriteOptions{Namespace: d.Namespace}).WithContext(ctx))
	if err != nil {
		cur, _, rerr := a.Jobs.Info(d.JobID, (&api.QueryOptions{Namespace: d.Namespace}).WithContext(ctx))
		if rerr == nil && *cur.JobModifyIndex != d.Version {
			return fmt.Errorf("%w: %s/%s moved to index %d during the write: %v", ErrConflict, d.Namespace, d.JobID, *cur.JobModifyIndex, err)
		}
		return fmt.Errorf("writing job %s/%s: %w", d.Namespace, d.JobID, err)
	}
	if a.Store != nil {
		job.JobModifyIndex = &resp.JobModifyIndex
		a.Store.UpsertJob(job)
	}
	return nil
}

// statusCoder is implemented by api.UnexpectedResponseError.
type statusCoder interface{ StatusCode() int }

func isNotFound(err error) bool {
	var sc statusCoder
	return errors.As(err, &sc) && sc.StatusCode() == 404
}

func pointer[T any](v T) *T { return &v }
