package actuate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// fakeJobs is an in-memory Nomad job API with check-and-set semantics; it
// sets SubmitTime on every write, as Nomad's server does.
type fakeJobs struct {
	job      *api.Job
	writes   []*api.RegisterOptions
	written  *api.Job
	onWrite  func(*fakeJobs) // runs before the write is checked
	writeErr error
	reads    int
	deregs   []string
}

func (f *fakeJobs) Info(id string, q *api.QueryOptions) (*api.Job, *api.QueryMeta, error) {
	f.reads++
	if f.job == nil {
		return nil, nil, notFound{}
	}
	cp := *f.job
	cp.Meta = map[string]string{}
	for k, v := range f.job.Meta {
		cp.Meta[k] = v
	}
	// Groups are copied too: the writers change their constraints.
	cp.TaskGroups = nil
	for _, tg := range f.job.TaskGroups {
		g := *tg
		g.Constraints = append([]*api.Constraint(nil), tg.Constraints...)
		cp.TaskGroups = append(cp.TaskGroups, &g)
	}
	return &cp, nil, nil
}

func (f *fakeJobs) RegisterOpts(job *api.Job, o *api.RegisterOptions, q *api.WriteOptions) (*api.JobRegisterResponse, *api.WriteMeta, error) {
	f.writes = append(f.writes, o)
	if f.onWrite != nil {
		f.onWrite(f)
	}
	if f.writeErr != nil {
		return nil, nil, f.writeErr
	}
	if o.EnforceIndex && o.ModifyIndex != *f.job.JobModifyIndex {
		return nil, nil, errors.New("enforcing job modify index: conflict")
	}
	next := *f.job.JobModifyIndex + 1
	cp := *job
	cp.JobModifyIndex = &next
	cp.SubmitTime = pointer(now.UnixNano())
	f.job, f.written = &cp, &cp
	return &api.JobRegisterResponse{JobModifyIndex: next}, nil, nil
}

// notFound is an API error with status 404.
type notFound struct{}

func (notFound) Error() string   { return "Unexpected response code: 404 (job not found)" }
func (notFound) StatusCode() int { return 404 }

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

var sealer = func() *jobmeta.Sealer {
	s, err := jobmeta.NewSealer([]byte("actuate-test-key-actuate-test-key"))
	if err != nil {
		panic(err)
	}
	return s
}()

func mkJob(stop bool, meta map[string]string, index uint64) *api.Job {
	j := api.NewBatchJob("train.v1_A", "train.v1_A", "global", 50)
	j.Namespace = pointer("ml")
	j.Stop = pointer(stop)
	j.Meta = meta
	j.JobModifyIndex = &index
	j.SubmitTime = pointer(now.Add(-time.Hour).UnixNano())
	return j
}

// sealed returns a job the governor wrote at `at` with record r.
func sealed(t *testing.T, r jobmeta.Record, at time.Time, index uint64) *api.Job {
	j := mkJob(false, nil, index)
	var err error
	switch r.State {
	case jobmeta.StateAdmitted:
		err = sealer.Admit(j, r, jobmeta.Stamp{Now: at})
	default:
		err = sealer.Hold(j, r, jobmeta.Stamp{Now: at})
	}
	must.NoError(t, err)
	j.SubmitTime = pointer(at.UnixNano())
	return j
}

func held(t *testing.T) *api.Job {
	return sealed(t, jobmeta.Record{State: jobmeta.StateQueued, QueuedAt: now.Add(-time.Hour)}, now.Add(-time.Hour), 7)
}

func running(t *testing.T, r jobmeta.Record, index uint64) *api.Job {
	r.State = jobmeta.StateAdmitted
	return sealed(t, r, now.Add(-30*time.Minute), index)
}

func newActuator(f *fakeJobs) *Actuator {
	return &Actuator{Jobs: f, Sealer: sealer, Log: hclog.NewNullLogger(), Now: func() time.Time { return now }}
}

func decision(act engine.Action, version uint64) engine.Decision {
	return engine.Decision{Action: act, Namespace: "ml", JobID: "train.v1_A", Version: version, Priority: 70,
		QueuedAt: now.Add(-time.Minute), Reason: "test"}
}

func requeueDecision(version uint64, preemptor string) engine.Decision {
	d := decision(engine.Requeue, version)
	d.Preemptor, d.Cause = preemptor, engine.CauseReclaim
	return d
}

// record is the verified record of what the actuator wrote.
func record(t *testing.T, f *fakeJobs) jobmeta.Record {
	t.Helper()
	r, err := sealer.Verify(f.written)
	must.NoError(t, err)
	return r
}

func TestApplyOne(t *testing.T) {
	cases := map[string]struct {
		job     func(t *testing.T) *api.Job
		d       engine.Decision
		onWrite func(*fakeJobs)
		err     error
		changed bool
		check   func(t *testing.T, f *fakeJobs)
	}{
		"admit a held job": {
			job: held, d: decision(engine.Admit, 7), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.Eq(t, []*api.RegisterOptions{{EnforceIndex: true, ModifyIndex: 7}}, f.writes)
				must.False(t, *f.written.Stop)
				must.Eq(t, jobmeta.Record{State: jobmeta.StateAdmitted, QueuedAt: now.Add(-time.Hour), AdmittedAt: now}, record(t, f))
				must.Eq(t, 70, *f.written.Priority)
			},
		},
		"admitting twice writes once": {
			job: func(t *testing.T) *api.Job { return running(t, jobmeta.Record{}, 8) }, d: decision(engine.Admit, 7),
			check: func(t *testing.T, f *fakeJobs) { must.SliceEmpty(t, f.writes) },
		},
		"a newer version is a conflict": {
			job: held, d: decision(engine.Admit, 6), err: ErrConflict,
			check: func(t *testing.T, f *fakeJobs) { must.SliceEmpty(t, f.writes) },
		},
		"a job the user stopped is never restarted": {
			job: func(*testing.T) *api.Job { return mkJob(true, nil, 7) }, d: decision(engine.Admit, 7), err: ErrConflict,
			check: func(t *testing.T, f *fakeJobs) { must.SliceEmpty(t, f.writes) },
		},
		"a forged held record is a user's stop, never admitted": {
			job: func(*testing.T) *api.Job {
				return mkJob(true, map[string]string{jobmeta.State: jobmeta.StateQueued, jobmeta.QueuedAt: "2000-01-01T00:00:00Z"}, 7)
			},
			d: decision(engine.Admit, 7), err: ErrConflict,
			check: func(t *testing.T, f *fakeJobs) { must.SliceEmpty(t, f.writes) },
		},
		"hold a direct job": {
			job: func(*testing.T) *api.Job { return mkJob(false, map[string]string{"team": "a"}, 3) }, d: decision(engine.Hold, 3), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.True(t, *f.written.Stop)
				must.Eq(t, jobmeta.Record{State: jobmeta.StateQueued, QueuedAt: now}, record(t, f))
				must.Eq(t, "a", f.written.Meta["team"])
				must.Eq(t, "0", f.written.Meta[jobmeta.Requeues])
			},
		},
		"hold of a direct job with forged queue meta drops it (audit #8)": {
			job: func(*testing.T) *api.Job {
				return mkJob(false, map[string]string{jobmeta.State: jobmeta.StateAdmitted, jobmeta.QueuedAt: "2000-01-01T00:00:00Z",
					jobmeta.PreemptedBy: "ml/blocker", jobmeta.RequeuedAt: now.Format(time.RFC3339), jobmeta.Requeues: "9"}, 3)
			},
			d: decision(engine.Hold, 3), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.Eq(t, jobmeta.Record{State: jobmeta.StateQueued, QueuedAt: now}, record(t, f))
			},
		},
		"a user's edit during the write wins": {
			job: held, d: decision(engine.Admit, 7),
			onWrite: func(f *fakeJobs) { f.job.JobModifyIndex = pointer(uint64(9)) },
			err:     ErrConflict,
			check:   func(t *testing.T, f *fakeJobs) { must.Nil(t, f.written) },
		},
		"forget a held job its user stopped": {
			job: held, d: decision(engine.Forget, 7), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.True(t, *f.written.Stop)
				must.MapEmpty(t, f.written.Meta)
				must.Eq(t, 50, *f.written.Priority, must.Sprint("priority untouched"))
			},
		},
		"requeue a preemption victim": {
			job: func(t *testing.T) *api.Job {
				return running(t, jobmeta.Record{QueuedAt: now.Add(-time.Hour), Requeues: 1}, 5)
			},
			d: requeueDecision(5, "ml/boss"), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.Eq(t, []*api.RegisterOptions{{EnforceIndex: true, ModifyIndex: 5}}, f.writes)
				must.True(t, *f.written.Stop)
				must.Eq(t, jobmeta.Record{State: jobmeta.StateQueued, QueuedAt: now.Add(-time.Hour), Requeues: 2,
					RequeuedAt: now, PreemptedBy: []string{sealer.Ref("ml/boss")}}, record(t, f))
			},
		},
		"a victim remembers every recent preemptor, most recent last": {
			job: func(t *testing.T) *api.Job {
				return running(t, jobmeta.Record{PreemptedBy: []string{"ml/boss", "ml/other"}}, 5)
			},
			d: requeueDecision(5, "ml/boss"), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.Eq(t, []string{sealer.Ref("ml/other"), sealer.Ref("ml/boss")}, record(t, f).PreemptedBy)
			},
		},
		"requeue of a gang timeout keeps the preemptors": {
			job: func(t *testing.T) *api.Job { return running(t, jobmeta.Record{PreemptedBy: []string{"ml/old"}}, 5) },
			d:   requeueDecision(5, ""), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				r := record(t, f)
				must.Eq(t, 1, r.Requeues)
				must.Eq(t, now, r.QueuedAt)
				must.Eq(t, []string{sealer.Ref("ml/old")}, r.PreemptedBy)
			},
		},
		"requeue of a direct job ignores its forged requeue meta": {
			job: func(*testing.T) *api.Job {
				return mkJob(false, map[string]string{jobmeta.Requeues: "40", jobmeta.PreemptedBy: "ml/x"}, 5)
			},
			d: requeueDecision(5, "ml/boss"), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.Eq(t, jobmeta.Record{State: jobmeta.StateQueued, QueuedAt: now, Requeues: 1, RequeuedAt: now,
					PreemptedBy: []string{sealer.Ref("ml/boss")}}, record(t, f))
			},
		},
		"a requeue never restarts or touches a job the user stopped": {
			job: func(*testing.T) *api.Job { return mkJob(true, nil, 5) }, d: requeueDecision(5, "ml/boss"), err: ErrConflict,
			check: func(t *testing.T, f *fakeJobs) { must.SliceEmpty(t, f.writes) },
		},
		"a requeue of a job changed since the decision conflicts": {
			job: func(t *testing.T) *api.Job { return running(t, jobmeta.Record{}, 6) }, d: requeueDecision(5, "ml/boss"), err: ErrConflict,
			check: func(t *testing.T, f *fakeJobs) { must.SliceEmpty(t, f.writes) },
		},
		"a deleted job is gone": {
			job: func(*testing.T) *api.Job { return nil }, d: decision(engine.Admit, 7), err: ErrGone,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeJobs{job: tc.job(t), onWrite: tc.onWrite}
			changed, err := newActuator(f).ApplyOne(context.Background(), tc.d)
			if tc.err != nil {
				must.ErrorIs(t, err, tc.err)
			} else {
				must.NoError(t, err)
			}
			must.Eq(t, tc.changed, changed)
			if tc.check != nil {
				tc.check(t, f)
			}
		})
	}
}

func TestApplyPlanCounts(t *testing.T) {
	f := &fakeJobs{job: held(t)}
	a := newActuator(f)
	p := &engine.Plan{Decisions: []engine.Decision{decision(engine.Admit, 7)}}
	res := a.Apply(context.Background(), p)
	must.SliceLen(t, 1, res.Applied)
	res = a.Apply(context.Background(), p)
	must.Eq(t, 1, res.Unchanged)
	must.SliceEmpty(t, res.Applied)
}

// TestAudit19_MissingSubmitterTokenIsRecordedNotRetried: on a cluster that
// needs the submitter's Vault token, Nomad refuses the governor's write;
// the actuator reports it once as blocked and does not retry that version.
func TestAudit19_MissingSubmitterTokenIsRecordedNotRetried(t *testing.T) {
	vaultErr := errors.New("Unexpected response code: 500 (1 error occurred:\n\t* Vault used in the job but missing Vault token\n\n)")
	f := &fakeJobs{job: mkJob(false, nil, 3), writeErr: vaultErr}
	a := newActuator(f)
	p := &engine.Plan{Decisions: []engine.Decision{decision(engine.Hold, 3)}}
	res := a.Apply(context.Background(), p)
	must.SliceLen(t, 1, res.Blocked)
	must.ErrorIs(t, res.Blocked[0].Err, jobmeta.ErrSubmitterToken)
	must.SliceEmpty(t, res.Errors)
	reads, writes := f.reads, len(f.writes)
	res = a.Apply(context.Background(), p)
	must.SliceEmpty(t, res.Blocked)
	must.Eq(t, 1, res.Unchanged)
	must.Eq(t, reads, f.reads, must.Sprint("no read of a blocked version"))
	must.Eq(t, writes, len(f.writes), must.Sprint("no write of a blocked version"))

	// A new version (the user re-submitted) is tried again.
	f.job.JobModifyIndex, f.writeErr = pointer(uint64(4)), nil
	res = a.Apply(context.Background(), &engine.Plan{Decisions: []engine.Decision{decision(engine.Hold, 4)}})
	must.SliceLen(t, 1, res.Applied)
}

func TestOtherWriteErrorsAreErrors(t *testing.T) {
	f := &fakeJobs{job: mkJob(false, nil, 3), writeErr: errors.New("Unexpected response code: 500 (raft leadership lost)")}
	res := newActuator(f).Apply(context.Background(), &engine.Plan{Decisions: []engine.Decision{decision(engine.Hold, 3)}})
	must.SliceLen(t, 1, res.Errors)
	must.SliceEmpty(t, res.Blocked)
}

func TestWithoutSealerNothingIsWritten(t *testing.T) {
	f := &fakeJobs{job: mkJob(false, nil, 3)}
	a := newActuator(f)
	a.Sealer = nil
	_, err := a.ApplyOne(context.Background(), decision(engine.Hold, 3))
	must.ErrorIs(t, err, jobmeta.ErrNoKey)
	must.SliceEmpty(t, f.writes)
}

func (f *fakeJobs) Deregister(id string, purge bool, q *api.WriteOptions) (string, *api.WriteMeta, error) {
	f.deregs = append(f.deregs, id)
	cp := *f.job
	cp.Stop = pointer(true)
	f.job = &cp
	return "eval", nil, nil
}

func TestStopDeregistersADispatchedChild(t *testing.T) {
	child := mkJob(false, nil, 4)
	child.Dispatched = true
	f := &fakeJobs{job: child}
	a := newActuator(f)
	changed, err := a.ApplyOne(context.Background(), decision(engine.Stop, 4))
	must.NoError(t, err)
	must.True(t, changed)
	must.Eq(t, []string{"train.v1_A"}, f.deregs)
	must.SliceEmpty(t, f.writes)
	changed, err = a.ApplyOne(context.Background(), decision(engine.Stop, 4))
	must.NoError(t, err)
	must.False(t, changed, must.Sprint("stopped already"))
}

// TestApplyReportsTheSubmitter: the accessor recorded in the sealed record
// (allot.submitted-by) comes back with the applied decision (audit #30).
func TestApplyReportsTheSubmitter(t *testing.T) {
	j := mkJob(false, nil, 7)
	must.NoError(t, sealer.Hold(j, jobmeta.Record{}, jobmeta.Stamp{Now: now.Add(-time.Hour), SubmittedBy: "acc-1"}))
	j.SubmitTime = pointer(now.Add(-time.Hour).UnixNano())
	f := &fakeJobs{job: j}
	res := newActuator(f).Apply(context.Background(), &engine.Plan{Decisions: []engine.Decision{decision(engine.Admit, 7)}})
	must.SliceLen(t, 1, res.Applied)
	must.Eq(t, map[string]string{"ml/train.v1_A": "acc-1"}, res.SubmittedBy)
	must.Eq(t, "acc-1", record(t, f).SubmittedBy, must.Sprint("carried by the governor's write"))
}
