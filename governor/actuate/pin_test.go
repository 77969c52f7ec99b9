package actuate

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// userRule is a tenant's own constraint of group "g": it survives every
// write, however the pin changes.
var userRule = api.Constraint{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}

// grouped is mkJob with one group "g" carrying userRule.
func grouped(stop bool, index uint64) *api.Job {
	j := mkJob(stop, nil, index)
	tg := api.NewTaskGroup("g", 1).AddTask(api.NewTask("t", "ckpt"))
	rule := userRule
	tg.Constraints = []*api.Constraint{&rule}
	j.AddTaskGroup(tg)
	return j
}

// pinnedAt is job grouped(index) the governor admitted and pinned to ids,
// as Nomad stores it.
func pinnedAt(t *testing.T, index uint64, ids ...string) *api.Job {
	j := grouped(false, index)
	at := now.Add(-30 * time.Minute)
	must.NoError(t, sealer.AdmitPinned(j, jobmeta.Record{QueuedAt: at.Add(-time.Hour)}, map[string][]string{"g": ids}, jobmeta.Stamp{Now: at}))
	j.SubmitTime = pointer(at.UnixNano())
	return j
}

// heldGrouped is grouped(index) held by the governor, as Nomad stores it.
func heldGrouped(t *testing.T, index uint64) *api.Job {
	j := grouped(false, index)
	must.NoError(t, sealer.Hold(j, jobmeta.Record{}, jobmeta.Stamp{Now: now.Add(-time.Hour)}))
	j.SubmitTime = pointer(now.Add(-time.Hour).UnixNano())
	return j
}

// groupRules lists the written job's constraints of group g.
func groupRules(f *fakeJobs) []api.Constraint {
	var out []api.Constraint
	for _, c := range f.written.TaskGroups[0].Constraints {
		out = append(out, *c)
	}
	return out
}

func pinRule(ids string) api.Constraint {
	return api.Constraint{LTarget: jobmeta.PinTarget, Operand: jobmeta.PinOperand, RTarget: ids}
}

func TestApplyPins(t *testing.T) {
	withNodes := func(d engine.Decision, nodes map[string][]string) engine.Decision { d.Nodes = nodes; return d }
	cases := map[string]struct {
		job     func(t *testing.T) *api.Job
		d       engine.Decision
		err     error
		changed bool
		rules   []api.Constraint // group g's constraints as written
		pin     jobmeta.Pin
		state   string
	}{
		"admit pins each group to its nodes": {
			job:     func(t *testing.T) *api.Job { return heldGrouped(t, 7) },
			d:       withNodes(decision(engine.Admit, 7), map[string][]string{"g": {"n2", "n1"}}),
			changed: true, rules: []api.Constraint{userRule, pinRule("n1,n2")}, pin: jobmeta.Pin{"g": "n1,n2"}, state: jobmeta.StateAdmitted,
		},
		"admit without nodes does not pin": {
			job:     func(t *testing.T) *api.Job { return heldGrouped(t, 7) },
			d:       decision(engine.Admit, 7),
			changed: true, rules: []api.Constraint{userRule}, state: jobmeta.StateAdmitted,
		},
		"unpin keeps the job admitted": {
			job: func(t *testing.T) *api.Job { return pinnedAt(t, 5, "n1") }, d: decision(engine.Unpin, 5),
			changed: true, rules: []api.Constraint{userRule}, state: jobmeta.StateAdmitted,
		},
		"requeue removes the pin": {
			job: func(t *testing.T) *api.Job { return pinnedAt(t, 5, "n1") }, d: requeueDecision(5, "ml/boss"),
			changed: true, rules: []api.Constraint{userRule}, state: jobmeta.StateQueued,
		},
		"hold removes the pin": {
			job: func(t *testing.T) *api.Job { return pinnedAt(t, 5, "n1") }, d: decision(engine.Hold, 5),
			changed: true, rules: []api.Constraint{userRule}, state: jobmeta.StateQueued,
		},
		"unpin of an unpinned job is nothing to do": {
			job: func(t *testing.T) *api.Job { return running(t, jobmeta.Record{}, 5) }, d: decision(engine.Unpin, 5),
		},
		"unpin of a job changed since is a conflict": {
			job: func(t *testing.T) *api.Job { return pinnedAt(t, 6, "n1") }, d: decision(engine.Unpin, 5), err: ErrConflict,
		},
		"unpin of a held job is a conflict": {
			job: func(t *testing.T) *api.Job { return heldGrouped(t, 5) }, d: decision(engine.Unpin, 5), err: ErrConflict,
		},
		"unpin of a job the user stopped is a conflict": {
			job: func(t *testing.T) *api.Job { return grouped(true, 5) }, d: decision(engine.Unpin, 5), err: ErrConflict,
		},
		"a forged pin on a direct job is not removed": {
			job: func(t *testing.T) *api.Job {
				j := grouped(false, 5)
				rule := pinRule("n1")
				j.TaskGroups[0].Constraints = append(j.TaskGroups[0].Constraints, &rule)
				j.Meta = map[string]string{jobmeta.PinKey: `{"g":"n1"}`, jobmeta.State: jobmeta.StateAdmitted}
				return j
			},
			d:       decision(engine.Hold, 5),
			changed: true, rules: []api.Constraint{userRule, pinRule("n1")}, state: jobmeta.StateQueued,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeJobs{job: tc.job(t)}
			changed, err := newActuator(f).ApplyOne(context.Background(), tc.d)
			if tc.err != nil {
				must.ErrorIs(t, err, tc.err)
			} else {
				must.NoError(t, err)
			}
			must.Eq(t, tc.changed, changed)
			if !tc.changed {
				must.SliceEmpty(t, f.writes)
				return
			}
			must.Eq(t, []*api.RegisterOptions{{EnforceIndex: true, ModifyIndex: tc.d.Version}}, f.writes)
			must.Eq(t, tc.rules, groupRules(f))
			r := record(t, f)
			must.Eq(t, tc.pin, r.Pin)
			must.Eq(t, tc.state, r.State)
		})
	}
}

// TestUnpinKeepsAdmittedAtAndPriority: an unpin is not a new admission:
// the gang timeout keeps counting from the admission and the priority
// stays; applied twice, it writes once.
func TestUnpinKeepsAdmittedAtAndPriority(t *testing.T) {
	f := &fakeJobs{job: pinnedAt(t, 5, "n1", "n2")}
	a := newActuator(f)
	d := decision(engine.Unpin, 5)
	res := a.Apply(context.Background(), &engine.Plan{Decisions: []engine.Decision{d}})
	must.SliceLen(t, 1, res.Applied)
	r := record(t, f)
	must.Eq(t, now.Add(-30*time.Minute), r.AdmittedAt)
	must.Eq(t, now.Add(-90*time.Minute), r.QueuedAt)
	must.Eq(t, 50, *f.written.Priority)
	must.False(t, *f.written.Stop)
	d.Version = *f.job.JobModifyIndex
	res = a.Apply(context.Background(), &engine.Plan{Decisions: []engine.Decision{d}})
	must.Eq(t, 1, res.Unchanged)
	must.SliceLen(t, 1, f.writes)
}
