package actuate

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/hahttp"
)

// fakeFence is a lease a test sets; lookups counts Lease calls and
// onLease runs on each (to lose the lead between two of them).
type fakeFence struct {
	epoch    uint64
	deadline time.Time
	leading  bool
	lookups  int
	onLease  func(f *fakeFence)
	held     int
	released int
}

func (f *fakeFence) Lease() (uint64, time.Time, bool) {
	f.lookups++
	if f.onLease != nil {
		f.onLease(f)
	}
	return f.epoch, f.deadline, f.leading
}

func (f *fakeFence) Hold(epoch uint64) (func(), bool) {
	cur, _, ok := f.Lease()
	if !ok || cur != epoch {
		return nil, false
	}
	f.held++
	return func() { f.released++ }, true
}

// headerJobs records the options of every write besides fakeJobs' work.
type headerJobs struct {
	*fakeJobs
	headers   []map[string]string
	deadlines []time.Time
}

func (h *headerJobs) RegisterOpts(job *api.Job, o *api.RegisterOptions, q *api.WriteOptions) (*api.JobRegisterResponse, *api.WriteMeta, error) {
	h.headers = append(h.headers, q.Headers)
	dl, _ := q.Context().Deadline()
	h.deadlines = append(h.deadlines, dl)
	return h.fakeJobs.RegisterOpts(job, o, q)
}

func (h *headerJobs) Deregister(id string, purge bool, q *api.WriteOptions) (string, *api.WriteMeta, error) {
	h.headers = append(h.headers, q.Headers)
	h.deregs = append(h.deregs, id)
	return "", nil, nil
}

func TestFencedWrites(t *testing.T) {
	deadline := time.Now().Add(time.Hour)
	cases := map[string]struct {
		fence  *fakeFence
		d      engine.Decision
		err    error
		writes int
		check  func(t *testing.T, h *headerJobs)
		// fenceCheck runs on the fence after the write.
		fenceCheck func(t *testing.T, f *fakeFence)
	}{
		"a leader's write carries its term and ends by its lease": {
			fence: &fakeFence{epoch: 42, deadline: deadline, leading: true}, d: decision(engine.Admit, 7), writes: 1,
			check: func(t *testing.T, h *headerJobs) {
				must.Eq(t, map[string]string{hahttp.EpochHeader: "42"}, h.headers[0])
				must.Eq(t, deadline, h.deadlines[0])
				must.Eq(t, uint64(42), record(t, h.fakeJobs).Epoch)
				must.Eq(t, "42", h.written.Meta["allot.epoch"])
				must.Eq(t, []*api.RegisterOptions{{EnforceIndex: true, ModifyIndex: 7}}, h.writes)
			},
			fenceCheck: func(t *testing.T, f *fakeFence) { must.Eq(t, 1, f.held); must.Eq(t, 1, f.released) },
		},
		"a standby writes nothing and reads nothing": {
			fence: &fakeFence{epoch: 42, deadline: deadline}, d: decision(engine.Admit, 7), err: ErrNotLeader,
			check: func(t *testing.T, h *headerJobs) { must.Eq(t, 0, h.reads) },
		},
		"a lead lost between the read and the write writes nothing": {
			fence: &fakeFence{epoch: 42, deadline: deadline, leading: true,
				onLease: func(f *fakeFence) { f.leading = f.lookups < 2 }},
			d: decision(engine.Admit, 7), err: ErrNotLeader,
			check: func(t *testing.T, h *headerJobs) { must.Eq(t, 1, h.reads) },
		},
		"a newer term of the same governor does not send the older term's write": {
			fence: &fakeFence{epoch: 42, deadline: deadline, leading: true,
				onLease: func(f *fakeFence) {
					if f.lookups > 1 {
						f.epoch = 43
					}
				}},
			d: decision(engine.Admit, 7), err: ErrNotLeader,
		},
		"a stop carries the term": {
			fence: &fakeFence{epoch: 5, deadline: deadline, leading: true}, d: decision(engine.Stop, 3),
			check: func(t *testing.T, h *headerJobs) {
				must.Eq(t, []string{"train.v1_A"}, h.deregs)
				must.Eq(t, map[string]string{hahttp.EpochHeader: "5"}, h.headers[0])
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := held(t)
			if tc.d.Action == engine.Stop {
				job = mkJob(false, nil, 3)
			}
			h := &headerJobs{fakeJobs: &fakeJobs{job: job}}
			a := newActuator(h.fakeJobs)
			a.Jobs, a.Fence = h, tc.fence
			_, err := a.ApplyOne(context.Background(), tc.d)
			if tc.err != nil {
				must.ErrorIs(t, err, tc.err)
			} else {
				must.NoError(t, err)
			}
			must.SliceLen(t, tc.writes, h.writes)
			if tc.check != nil {
				tc.check(t, h)
			}
			if tc.fenceCheck != nil {
				tc.fenceCheck(t, tc.fence)
			}
		})
	}
}

// TestApplyOnAStandby: a standby's plan is a preview: nothing is read or
// written, and that is no error.
func TestApplyOnAStandby(t *testing.T) {
	f := &fakeJobs{job: held(t)}
	a := newActuator(f)
	a.Fence = &fakeFence{epoch: 1, deadline: time.Now().Add(time.Hour)}
	res := a.Apply(context.Background(), &engine.Plan{Decisions: []engine.Decision{decision(engine.Admit, 7)}})
	must.True(t, res.Standby)
	must.SliceEmpty(t, res.Errors)
	must.Eq(t, 0, f.reads)
}

// TestApplyStopsAtLostLead: once the lead is lost mid-plan, Apply leaves
// the rest of the plan alone.
func TestApplyStopsAtLostLead(t *testing.T) {
	f := &fakeJobs{job: held(t)}
	a := newActuator(f)
	a.Fence = &fakeFence{epoch: 1, deadline: time.Now().Add(time.Hour), leading: true,
		onLease: func(f *fakeFence) { f.leading = f.lookups < 2 }}
	res := a.Apply(context.Background(), &engine.Plan{Decisions: []engine.Decision{decision(engine.Admit, 7), decision(engine.Hold, 7)}})
	must.False(t, res.Standby)
	must.SliceLen(t, 1, res.Errors)
	must.ErrorIs(t, res.Errors[0], ErrNotLeader)
	must.Eq(t, 0, f.reads)
}
