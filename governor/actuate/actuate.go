// Package actuate applies the engine's plans to Nomad: it holds and
// releases jobs with check-and-set writes (EnforceIndex) using the
// governor's own token, so a user's concurrent change is never
// overwritten.
package actuate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// Sentinel outcomes of applying one decision.
var (
	// ErrConflict means the job changed since the decision was made; the
	// caller recomputes from fresh state.
	ErrConflict = errors.New("job changed since the decision")
	// ErrGone means the job no longer exists.
	ErrGone = errors.New("job no longer exists")
	// ErrNotLeader means this governor does not lead (HA): it writes
	// nothing (fence.go).
	ErrNotLeader = errors.New("not the leader: the governor writes nothing")
)

// Jobs is the part of the Nomad API the actuator uses.
type Jobs interface {
	Info(jobID string, q *api.QueryOptions) (*api.Job, *api.QueryMeta, error)
	RegisterOpts(job *api.Job, opts *api.RegisterOptions, q *api.WriteOptions) (*api.JobRegisterResponse, *api.WriteMeta, error)
	Deregister(jobID string, purge bool, q *api.WriteOptions) (string, *api.WriteMeta, error)
}

// Actuator applies decisions.
type Actuator struct {
	Jobs Jobs
	// Store, when set, learns of every write at once.
	Store *cluster.Store
	// Sealer verifies the stored jobs' governor records and seals every
	// record the actuator writes; without one nothing is written.
	Sealer *jobmeta.Sealer
	Log    hclog.Logger
	Now    func() time.Time
	// Fence, when set (HA), is the leader's lease: every write checks it
	// right before it is sent, carries its term and ends by its deadline
	// (fence.go). nil: a single governor, every write allowed.
	Fence Fence

	// stuck holds job versions Nomad refused to register without their
	// submitter's Vault/Consul token (audit #19): key → JobModifyIndex.
	stuckMu sync.Mutex
	stuck   map[string]uint64
}

// Result counts the outcome of applying a plan.
type Result struct {
	Applied   []engine.Decision
	Unchanged int
	Conflicts int
	Errors    []error
	// Standby is set when nothing was applied because this governor does
	// not lead (HA): its plan is a preview, for the reads it serves.
	Standby bool
	// Blocked are decisions Nomad refused because the job needs its
	// submitter's Vault/Consul token; the same job version is not tried
	// again (audit #19).
	Blocked []Blocked
	// SubmittedBy maps "ns/id" of the jobs written to the accessor ID of
	// the token that submitted them through the governor (their sealed
	// record's allot.submitted-by), for the decisions journal: Nomad
	// records the governor's own token as the submitter of its writes.
	SubmittedBy map[string]string
}

// Blocked is a decision that cannot be applied and why.
type Blocked struct {
	Decision engine.Decision
	Err      error
}

// Apply applies every decision of the plan; one failure does not stop the
// others.
func (a *Actuator) Apply(ctx context.Context, p *engine.Plan) Result {
	var res Result
	if a.Fence != nil {
		if _, _, ok := a.Fence.Lease(); !ok {
			res.Standby = true
			return res
		}
	}
	for _, d := range p.Decisions {
		if ctx.Err() != nil {
			res.Errors = append(res.Errors, ctx.Err())
			return res
		}
		changed, by, err := a.applyOne(ctx, d)
		if by != "" {
			if res.SubmittedBy == nil {
				res.SubmittedBy = map[string]string{}
			}
			res.SubmittedBy[d.Namespace+"/"+d.JobID] = by
		}
		switch {
		case errors.Is(err, ErrConflict):
			res.Conflicts++
			a.Log.Debug("decision conflicts with a newer job version, recomputing", "job", d.Namespace+"/"+d.JobID, "error", err)
		case errors.Is(err, jobmeta.ErrSubmitterToken):
			res.Blocked = append(res.Blocked, Blocked{Decision: d, Err: err})
			a.Log.Warn("Nomad needs the submitter's Vault/Consul token to write this job; not retried until the job changes",
				"action", d.Action, "job", d.Namespace+"/"+d.JobID, "error", err)
		case errors.Is(err, ErrNotLeader):
			res.Errors = append(res.Errors, err)
			a.Log.Info("lost the lead: the rest of the plan is not applied", "job", d.Namespace+"/"+d.JobID)
			return res
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
// is left alone. A job version Nomad refused for want of its submitter's
// Vault/Consul token is not tried again (its error wraps
// jobmeta.ErrSubmitterToken the first time).
func (a *Actuator) ApplyOne(ctx context.Context, d engine.Decision) (bool, error) {
	changed, _, err := a.applyOne(ctx, d)
	return changed, err
}

// applyOne is ApplyOne that also returns the submitter recorded in the
// job's sealed record.
func (a *Actuator) applyOne(ctx context.Context, d engine.Decision) (bool, string, error) {
	if a.isBlocked(d) {
		return false, "", nil // refused for want of a token: recorded once, not retried
	}
	ctx, epoch, cancel, err := a.fenced(ctx)
	if err != nil {
		return false, "", err
	}
	defer cancel()
	job, _, err := a.Jobs.Info(d.JobID, (&api.QueryOptions{Namespace: d.Namespace}).WithContext(ctx))
	if isNotFound(err) {
		if a.Store != nil {
			a.Store.DeleteJob(d.Namespace, d.JobID)
		}
		return false, "", ErrGone
	}
	if err != nil {
		return false, "", fmt.Errorf("reading job %s/%s: %w", d.Namespace, d.JobID, err)
	}
	prev, _ := a.Sealer.Verify(job)
	state := cluster.JobState(job, a.Sealer)
	if done(d.Action, state, prev.Pinned()) {
		return false, "", nil
	}
	if *job.JobModifyIndex != d.Version || !applicable(d.Action, state) {
		return false, "", fmt.Errorf("%w: %s/%s is %s at index %d, decided %s at index %d",
			ErrConflict, d.Namespace, d.JobID, state, *job.JobModifyIndex, d.Action, d.Version)
	}
	if d.Action == engine.Stop {
		changed, err := a.stop(ctx, d, epoch)
		return changed, prev.SubmittedBy, err
	}
	if err := a.mutate(job, prev, d, epoch); err != nil {
		return false, "", fmt.Errorf("writing the governor record of %s/%s: %w", d.Namespace, d.JobID, err)
	}
	if err := a.write(ctx, job, d, epoch); err != nil {
		return false, prev.SubmittedBy, a.blocked(d, err)
	}
	return true, prev.SubmittedBy, nil
}

// done reports whether the job is already where the action would put it
// (pinned: the verified record names a placement pin).
func done(act engine.Action, s engine.State, pinned bool) bool {
	switch act {
	case engine.Admit:
		return s == engine.Admitted
	case engine.Unpin:
		return s == engine.Admitted && !pinned
	case engine.Hold, engine.Requeue:
		return s == engine.Queued
	case engine.Stop:
		return s == engine.Stopped
	}
	return s != engine.Queued
}

// applicable reports whether the action may change a job in state s: only
// held jobs are admitted, only admitted (pinned) ones unpinned, and a job
// a user stopped is never touched.
func applicable(act engine.Action, s engine.State) bool {
	switch act {
	case engine.Hold, engine.Requeue, engine.Stop:
		return s == engine.Direct || s == engine.Admitted
	case engine.Unpin:
		return s == engine.Admitted
	}
	return s == engine.Queued
}

// mutate sets the job contract's fields for the decision through the
// jobmeta writers: prev is the governor record of the job as Nomad stores
// it (verified), so nothing a user wrote into allot.* keys is carried, and
// the only pin any writer removes is the one that record names. An Admit
// pins the job to d.Nodes (none: not pinned); an Unpin only removes the
// pin, the job stays admitted at its priority.
func (a *Actuator) mutate(job *api.Job, prev jobmeta.Record, d engine.Decision, epoch uint64) error {
	prio := d.Priority
	if prio > 0 && d.Action != engine.Forget && d.Action != engine.Unpin {
		job.Priority = &prio
	}
	st := jobmeta.Stamp{Now: a.Now().UTC(), Epoch: epoch}
	switch d.Action {
	case engine.Admit:
		return a.Sealer.AdmitPinned(job, prev, d.Nodes, st)
	case engine.Unpin:
		return a.Sealer.Unpin(job, prev, st)
	case engine.Hold:
		return a.Sealer.Hold(job, prev, st)
	case engine.Requeue:
		return a.Sealer.Requeue(job, prev, d.Preemptor, st)
	case engine.Forget:
		jobmeta.Forget(job, prev)
	}
	return nil
}

// write registers the job with EnforceIndex. A failed write is a conflict
// when the job's modify index moved meanwhile.
func (a *Actuator) write(ctx context.Context, job *api.Job, d engine.Decision, epoch uint64) error {
	opts := &api.RegisterOptions{EnforceIndex: true, ModifyIndex: d.Version}
	release, err := a.hold(epoch)
	if err != nil {
		return err
	}
	resp, _, err := a.Jobs.RegisterOpts(job, opts, writeOpts(ctx, d.Namespace, epoch))
	release()
	if err != nil {
		cur, _, rerr := a.Jobs.Info(d.JobID, (&api.QueryOptions{Namespace: d.Namespace}).WithContext(ctx))
		if rerr == nil && *cur.JobModifyIndex != d.Version {
			return fmt.Errorf("%w: %s/%s moved to index %d during the write: %v", ErrConflict, d.Namespace, d.JobID, *cur.JobModifyIndex, err)
		}
		return fmt.Errorf("writing job %s/%s: %w", d.Namespace, d.JobID, err)
	}
	if a.Store != nil {
		job.JobModifyIndex = &resp.JobModifyIndex
		// Nomad set its own SubmitTime on this write; the seal is checked
		// against it, so the store's early copy carries the write's time.
		submitted := a.Now().UnixNano()
		job.SubmitTime = &submitted
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

// blocked records a write Nomad refused for want of the submitter's
// Vault/Consul token, so that version of the job is not tried again, and
// returns err marked with jobmeta.ErrSubmitterToken; other errors pass.
func (a *Actuator) blocked(d engine.Decision, err error) error {
	err = jobmeta.AsSubmitterToken(err)
	if !errors.Is(err, jobmeta.ErrSubmitterToken) {
		return err
	}
	a.stuckMu.Lock()
	defer a.stuckMu.Unlock()
	if a.stuck == nil {
		a.stuck = map[string]uint64{}
	}
	a.stuck[d.Namespace+"/"+d.JobID] = d.Version
	return err
}

// isBlocked reports whether this version of the decision's job was refused
// for want of a token before. A new version (the user re-submitted it)
// is tried again.
func (a *Actuator) isBlocked(d engine.Decision) bool {
	a.stuckMu.Lock()
	defer a.stuckMu.Unlock()
	v, ok := a.stuck[d.Namespace+"/"+d.JobID]
	if ok && v != d.Version {
		delete(a.stuck, d.Namespace+"/"+d.JobID)
		return false
	}
	return ok
}

// stop deregisters (without purge) a job the governor cannot hold, such
// as a dispatched child, which Nomad 1.6.1 cannot update. Nomad's
// deregister has no check-and-set: the version was checked just before.
func (a *Actuator) stop(ctx context.Context, d engine.Decision, epoch uint64) (bool, error) {
	release, err := a.hold(epoch)
	if err != nil {
		return false, err
	}
	_, _, err = a.Jobs.Deregister(d.JobID, false, writeOpts(ctx, d.Namespace, epoch))
	release()
	if err != nil {
		return false, fmt.Errorf("stopping job %s/%s: %w", d.Namespace, d.JobID, err)
	}
	return true, nil
}
