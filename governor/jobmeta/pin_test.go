package jobmeta

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// userPin is a user's own constraint that looks exactly like a governor
// pin onto n1.
func userPin(ids string) *api.Constraint {
	return &api.Constraint{LTarget: PinTarget, Operand: PinOperand, RTarget: ids}
}

// constraintsOf lists group g's constraints as "L op R" strings.
func constraintsOf(j *api.Job, g string) []string {
	var out []string
	for _, tg := range j.TaskGroups {
		if *tg.Name != g {
			continue
		}
		for _, c := range tg.Constraints {
			out = append(out, c.LTarget+" "+c.Operand+" "+c.RTarget)
		}
	}
	return out
}

func TestNewPin(t *testing.T) {
	cases := map[string]struct {
		nodes map[string][]string
		want  Pin
	}{
		"nil":                       {nil, nil},
		"sorted and distinct":       {map[string][]string{"g": {"n2", "n1", "n2"}}, Pin{"g": "n1,n2"}},
		"empty groups left out":     {map[string][]string{"g": {"n1"}, "h": nil, "": {"n3"}}, Pin{"g": "n1"}},
		"commas and blanks dropped": {map[string][]string{"g": {"a,b", " n1", "", "n2"}}, Pin{"g": "n2"}},
		"nothing left":              {map[string][]string{"g": {"a,b"}}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { must.Eq(t, tc.want, NewPin(tc.nodes)) })
	}
}

// pinnedJob is job x admitted by the governor with a pin of group g onto
// ids, as Nomad stores it, and its verified record.
func pinnedJob(t *testing.T, s *Sealer, ids ...string) (*api.Job, Record) {
	t.Helper()
	j := MakeJob("x", "ml").Build()
	j.TaskGroups[0].Constraints = []*api.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}, userPin("n1")}
	must.NoError(t, s.AdmitPinned(j, Record{}, map[string][]string{"g": ids, "missing": {"n9"}}, Stamp{Now: t0}))
	j = stored(j, t0)
	rec, err := s.Verify(j)
	must.NoError(t, err)
	return j, rec
}

func TestPinWriters(t *testing.T) {
	s := testSealer()
	now := t0.Add(time.Hour)
	user := []string{"${attr.kernel.name} = linux", "${node.unique.id} set_contains_any n1"}
	cases := map[string]struct {
		write func(j *api.Job, prev Record) error
		want  []string
		state string
		pin   Pin
	}{
		"a re-admission replaces the pin": {
			write: func(j *api.Job, prev Record) error {
				return s.AdmitPinned(j, prev, map[string][]string{"g": {"n3"}}, Stamp{Now: now})
			},
			want: append(user, "${node.unique.id} set_contains_any n3"), state: StateAdmitted, pin: Pin{"g": "n3"},
		},
		"admit without nodes unpins": {
			write: func(j *api.Job, prev Record) error { return s.Admit(j, prev, Stamp{Now: now}) },
			want:  user, state: StateAdmitted,
		},
		"hold": {
			write: func(j *api.Job, prev Record) error { return s.Hold(j, prev, Stamp{Now: now}) },
			want:  user, state: StateQueued,
		},
		"requeue": {
			write: func(j *api.Job, prev Record) error { return s.Requeue(j, prev, "ml/y", Stamp{Now: now}) },
			want:  user, state: StateQueued,
		},
		"unpin": {
			write: func(j *api.Job, prev Record) error { return s.Unpin(j, prev, Stamp{Now: now}) },
			want:  user, state: StateAdmitted,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The user pinned n1 themselves; the governor pinned n1 too: one
			// of the two identical constraints is the governor's.
			j, prev := pinnedJob(t, s, "n1")
			must.Eq(t, Pin{"g": "n1"}, prev.Pin)
			must.Eq(t, append(append([]string(nil), user...), "${node.unique.id} set_contains_any n1"), constraintsOf(j, "g"))
			must.NoError(t, tc.write(j, prev))
			must.Eq(t, tc.want, constraintsOf(j, "g"))
			got, err := s.Verify(stored(j, now))
			must.NoError(t, err)
			must.Eq(t, tc.state, got.State)
			must.Eq(t, tc.pin, got.Pin)
		})
	}
}

func TestForgetRemovesThePin(t *testing.T) {
	s := testSealer()
	j, prev := pinnedJob(t, s, "n2", "n1")
	must.Eq(t, Pin{"g": "n1,n2"}, prev.Pin)
	Forget(j, prev)
	must.Eq(t, []string{"${attr.kernel.name} = linux", "${node.unique.id} set_contains_any n1"}, constraintsOf(j, "g"))
	must.False(t, HasOwned(j.Meta))
}

func TestUnpinKeepsTheAdmission(t *testing.T) {
	s := testSealer()
	j, prev := pinnedJob(t, s, "n2")
	now := t0.Add(time.Minute)
	must.NoError(t, s.Unpin(j, prev, Stamp{Now: now, Epoch: 4}))
	must.False(t, *j.Stop)
	got, err := s.Verify(stored(j, now))
	must.NoError(t, err)
	must.Eq(t, Record{State: StateAdmitted, AdmittedAt: t0, Epoch: 4}, got)
	// A record that does not say admitted is never unpinned.
	must.ErrorIs(t, s.Unpin(j, Record{State: StateQueued}, Stamp{Now: now}), ErrNotAdmitted)
}

// TestForgedPinRemovesNothing: a tenant's allot.pin, in a submission or
// written straight to Nomad with a forged or copied seal, never makes the
// governor believe a job is pinned nor remove the tenant's constraint.
func TestForgedPinRemovesNothing(t *testing.T) {
	s := testSealer()
	_, genuine := pinnedJob(t, s, "n1")
	genuineJob, _ := pinnedJob(t, s, "n1")
	cases := map[string]func(j *api.Job){
		"typed by hand":        func(j *api.Job) { j.Meta[PinKey] = `{"g":"n1"}` },
		"with a forged seal":   func(j *api.Job) { j.Meta[PinKey] = `{"g":"n1"}`; j.Meta[Seal] = "v1.1.AAAA" },
		"case variant":         func(j *api.Job) { j.Meta["Allot.Pin"] = `{"g":"n1"}` },
		"another job's record": func(j *api.Job) { copyOwned(j.Meta, genuineJob.Meta) },
	}
	for name, forge := range cases {
		t.Run(name, func(t *testing.T) {
			j := MakeJob("y", "ml").Meta("team", "a").Submitted(t0).Build()
			j.TaskGroups[0].Constraints = []*api.Constraint{userPin("n1")}
			forge(j)
			rec, err := s.Verify(j)
			must.Error(t, err)
			must.False(t, rec.Pinned())
			must.NoError(t, s.Hold(j, rec, Stamp{Now: t0}))
			must.Eq(t, []string{"${node.unique.id} set_contains_any n1"}, constraintsOf(j, "g"))
			must.MapNotContainsKey(t, StripOwned(j.Meta), PinKey)
			must.MapNotContainsKey(t, j.Meta, PinKey)
		})
	}
	must.True(t, genuine.Pinned())
}

func copyOwned(dst, src map[string]string) {
	for k, v := range src {
		if Owned(k) {
			dst[k] = v
		}
	}
}

// FuzzForgedPin: whatever allot.pin value, seal and constraint a tenant
// sends, the record read through Verify is never pinned and a writer given
// it removes none of the tenant's constraints.
func FuzzForgedPin(f *testing.F) {
	s := testSealer()
	f.Add(`{"g":"n1"}`, "n1", "v1.1.AAAA")
	f.Add(`{"g":""}`, "", "")
	f.Add(`[]`, "n1,n2", "v1.0.x")
	f.Fuzz(func(t *testing.T, pin, ids, seal string) {
		j := MakeJob("y", "ml").Submitted(t0).Meta(PinKey, pin, State, StateAdmitted, Seal, seal).Build()
		j.TaskGroups[0].Constraints = []*api.Constraint{userPin(ids)}
		_ = Parse(j.Meta) // never panics on any value
		rec, _ := s.Verify(j)
		if rec.Pinned() {
			t.Fatalf("forged allot.pin %q verified as a pin: %v", pin, rec.Pin)
		}
		for _, write := range []func() error{
			func() error { return s.Hold(j, rec, Stamp{Now: t0}) },
			func() error { return s.AdmitPinned(j, rec, nil, Stamp{Now: t0}) },
		} {
			if err := write(); err != nil {
				t.Fatal(err)
			}
			if got := constraintsOf(j, "g"); len(got) != 1 {
				t.Fatalf("the tenant's constraint was removed: %v", got)
			}
		}
	})
}
