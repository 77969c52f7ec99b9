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
)

// fakeJobs is an in-memory Nomad job API with check-and-set semantics.
type fakeJobs struct {
	job      *api.Job
	writes   []*api.RegisterOptions
	written  *api.Job
	onWrite  func(*fakeJobs) // runs before the write is checked
	writeErr error
}

func (f *fakeJobs) Info(id string, q *api.QueryOptions) (*api.Job, *api.QueryMeta, error) {
	if f.job == nil {
		return nil, nil, notFound{}
	}
	cp := *f.job
	cp.Meta = map[string]string{}
	for k, v := range f.job.Meta {
		cp.Meta[k] = v
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
	job.JobModifyIndex = &next
	f.job, f.written = job, job
	return &api.JobRegisterResponse{JobModifyIndex: next}, nil, nil
}

// notFound is an API error with status 404.
type notFound struct{}

func (notFound) Error() string   { return "Unexpected response code: 404 (job not found)" }
func (notFound) StatusCode() int { return 404 }

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func mkJob(stop bool, meta map[string]string, index uint64) *api.Job {
	j := api.NewBatchJob("train.v1_A", "train.v1_A", "global", 50)
	j.Namespace = pointer("ml")
	j.Stop = pointer(stop)
	j.Meta = meta
	j.JobModifyIndex = &index
	return j
}

func held() *api.Job {
	return mkJob(true, map[string]string{"allot.state": "queued", "allot.queued-at": "2026-01-01T11:00:00Z"}, 7)
}

func newActuator(f *fakeJobs) *Actuator {
	return &Actuator{Jobs: f, Log: hclog.NewNullLogger(), Now: func() time.Time { return now }}
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

func TestApplyOne(t *testing.T) {
	cases := map[string]struct {
		job     *api.Job
		d       engine.Decision
		onWrite func(*fakeJobs)
		err     error
		changed bool
		check   func(t *testing.T, f *fakeJobs)
	}{
		"admit a held job": {
			job: held(), d: decision(engine.Admit, 7), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.Eq(t, []*api.RegisterOptions{{EnforceIndex: true, ModifyIndex: 7}}, f.writes)
				must.False(t, *f.written.Stop)
				must.Eq(t, "admitted", f.written.Meta["allot.state"])
				must.Eq(t, "2026-01-01T12:00:00Z", f.written.Meta["allot.admitted-at"])
				must.Eq(t, 70, *f.written.Priority)
			},
		},
		"admitting twice writes once": {
			job: mkJob(false, map[string]string{"allot.state": "admitted"}, 8), d: decision(engine.Admit, 7),
			check: func(t *testing.T, f *fakeJobs) { must.SliceEmpty(t, f.writes) },
		},
		"a newer version is a conflict": {
			job: held(), d: decision(engine.Admit, 6), err: ErrConflict,
			check: func(t *testing.T, f *fakeJobs) { must.SliceEmpty(t, f.writes) },
		},
		"a job the user stopped is never restarted": {
			job: mkJob(true, nil, 7), d: decision(engine.Admit, 7), err: ErrConflict,
			check: func(t *testing.T, f *fakeJobs) { must.SliceEmpty(t, f.writes) },
		},
		"hold a direct job": {
			job: mkJob(false, nil, 3), d: decision(engine.Hold, 3), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.True(t, *f.written.Stop)
				must.Eq(t, map[string]string{"allot.state": "queued", "allot.queued-at": "2026-01-01T11:59:00Z", "allot.requeues": "0"}, f.written.Meta)
			},
		},
		"a user's edit during the write wins": {
			job: held(), d: decision(engine.Admit, 7),
			onWrite: func(f *fakeJobs) { f.job.JobModifyIndex = pointer(uint64(9)) },
			err:     ErrConflict,
			check:   func(t *testing.T, f *fakeJobs) { must.Nil(t, f.written) },
		},
		"forget a held job its user stopped": {
			job: held(), d: decision(engine.Forget, 7), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.True(t, *f.written.Stop)
				must.MapEmpty(t, f.written.Meta)
				must.Eq(t, 50, *f.written.Priority, must.Sprint("priority untouched"))
			},
		},
		"requeue a preemption victim": {
			job: mkJob(false, map[string]string{"allot.state": "admitted", "allot.queued-at": "2026-01-01T11:00:00Z",
				"allot.admitted-at": "2026-01-01T11:30:00Z", "allot.requeues": "1"}, 5),
			d: requeueDecision(5, "ml/boss"), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.Eq(t, []*api.RegisterOptions{{EnforceIndex: true, ModifyIndex: 5}}, f.writes)
				must.True(t, *f.written.Stop)
				must.Eq(t, map[string]string{"allot.state": "queued", "allot.queued-at": "2026-01-01T11:00:00Z",
					"allot.admitted-at": "2026-01-01T11:30:00Z", "allot.requeues": "2",
					"allot.requeued-at": "2026-01-01T12:00:00Z", "allot.preempted-by": "ml/boss"}, f.written.Meta)
			},
		},
		"a victim remembers every recent preemptor, most recent last": {
			job: mkJob(false, map[string]string{"allot.state": "admitted", "allot.preempted-by": "ml/boss ml/other"}, 5),
			d:   requeueDecision(5, "ml/boss"), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.Eq(t, "ml/other ml/boss", f.written.Meta["allot.preempted-by"])
			},
		},
		"requeue of a gang timeout counts from a malformed count and keeps the preemptors": {
			job: mkJob(false, map[string]string{"allot.state": "admitted", "allot.requeues": "x", "allot.preempted-by": "ml/old"}, 5),
			d:   requeueDecision(5, ""), changed: true,
			check: func(t *testing.T, f *fakeJobs) {
				must.Eq(t, "1", f.written.Meta["allot.requeues"])
				must.Eq(t, "2026-01-01T11:59:00Z", f.written.Meta["allot.queued-at"])
				must.Eq(t, "ml/old", f.written.Meta["allot.preempted-by"])
			},
		},
		"a requeue never restarts or touches a job the user stopped": {
			job: mkJob(true, nil, 5), d: requeueDecision(5, "ml/boss"), err: ErrConflict,
			check: func(t *testing.T, f *fakeJobs) { must.SliceEmpty(t, f.writes) },
		},
		"a requeue of a job changed since the decision conflicts": {
			job: mkJob(false, map[string]string{"allot.state": "admitted"}, 6), d: requeueDecision(5, "ml/boss"), err: ErrConflict,
			check: func(t *testing.T, f *fakeJobs) { must.SliceEmpty(t, f.writes) },
		},
		"a deleted job is gone": {
			job: nil, d: decision(engine.Admit, 7), err: ErrGone,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeJobs{job: tc.job, onWrite: tc.onWrite}
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
	f := &fakeJobs{job: held()}
	a := newActuator(f)
	p := &engine.Plan{Decisions: []engine.Decision{decision(engine.Admit, 7)}}
	res := a.Apply(context.Background(), p)
	must.SliceLen(t, 1, res.Applied)
	res = a.Apply(context.Background(), p)
	must.Eq(t, 1, res.Unchanged)
	must.SliceEmpty(t, res.Applied)
}
