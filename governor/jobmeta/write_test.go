package jobmeta

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

func TestWriters(t *testing.T) {
	s := testSealer()
	now := t0.Add(time.Hour)
	queued := Record{State: StateQueued, QueuedAt: t0, Requeues: 2, RequeuedAt: t0.Add(time.Minute),
		PreemptedBy: []string{"ml/a"}, SubmittedBy: "acc-1"}
	running := Record{State: StateAdmitted, QueuedAt: t0, AdmittedAt: t0.Add(time.Minute), Requeues: 1,
		RequeuedAt: t0, PreemptedBy: []string{"ml/a"}}
	cases := map[string]struct {
		write func(j *api.Job) error
		want  Record
		stop  bool
	}{
		"admit carries the queue history": {
			write: func(j *api.Job) error { return s.Admit(j, queued, Stamp{Now: now, Epoch: 3}) },
			want: Record{State: StateAdmitted, QueuedAt: t0, AdmittedAt: now, Requeues: 2, RequeuedAt: t0.Add(time.Minute),
				PreemptedBy: []string{s.Ref("ml/a")}, Epoch: 3, SubmittedBy: "acc-1"},
		},
		"hold of a new job queues it now": {
			write: func(j *api.Job) error { return s.Hold(j, Record{}, Stamp{Now: now, SubmittedBy: "acc-2"}) },
			want:  Record{State: StateQueued, QueuedAt: now, SubmittedBy: "acc-2"},
			stop:  true,
		},
		"an edit of a held job keeps its place": {
			write: func(j *api.Job) error { return s.Hold(j, queued, Stamp{Now: now}) },
			want: Record{State: StateQueued, QueuedAt: t0, Requeues: 2, RequeuedAt: t0.Add(time.Minute),
				PreemptedBy: []string{s.Ref("ml/a")}, SubmittedBy: "acc-1"},
			stop: true,
		},
		"hold of a running job queues it now, history kept": {
			write: func(j *api.Job) error { return s.Hold(j, running, Stamp{Now: now}) },
			want:  Record{State: StateQueued, QueuedAt: now, Requeues: 1, RequeuedAt: t0, PreemptedBy: []string{s.Ref("ml/a")}},
			stop:  true,
		},
		"requeue keeps its place and counts": {
			write: func(j *api.Job) error { return s.Requeue(j, running, "ml/b", Stamp{Now: now}) },
			want:  Record{State: StateQueued, QueuedAt: t0, Requeues: 2, RequeuedAt: now, PreemptedBy: []string{s.Ref("ml/a"), s.Ref("ml/b")}},
			stop:  true,
		},
		"requeue of a direct job": {
			write: func(j *api.Job) error { return s.Requeue(j, Record{}, "", Stamp{Now: now}) },
			want:  Record{State: StateQueued, QueuedAt: now, Requeues: 1, RequeuedAt: now},
			stop:  true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The caller's own allot.* values never survive a write.
			j := MakeJob("x", "ml").Meta(Class, "high", "team", "a", QueuedAt, "2000-01-01T00:00:00Z",
				PreemptedBy, "ml/forged", "Allot.Requeues", "0").Build()
			must.NoError(t, tc.write(j))
			must.Eq(t, tc.stop, *j.Stop)
			must.Eq(t, "high", j.Meta[Class])
			must.Eq(t, "a", j.Meta["team"])
			_, forged := j.Meta["Allot.Requeues"]
			must.False(t, forged)
			got, err := s.Verify(stored(j, now))
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}

// TestRequeuesAgreeAcrossWriters: every writer writes allot.requeues, so
// a held job reads the same whoever held it (the actuator wrote "0", the
// proxy nothing, before).
func TestRequeuesAgreeAcrossWriters(t *testing.T) {
	s := testSealer()
	a, b := MakeJob("a", "ml").Build(), MakeJob("b", "ml").Build()
	must.NoError(t, s.Hold(a, Record{}, Stamp{Now: t0}))
	must.NoError(t, s.Admit(b, Record{}, Stamp{Now: t0}))
	must.Eq(t, "0", a.Meta[Requeues])
	must.Eq(t, "0", b.Meta[Requeues])
}

func TestForget(t *testing.T) {
	s := testSealer()
	j := MakeJob("x", "ml").Meta(Class, "low").Build()
	must.NoError(t, s.Hold(j, Record{}, Stamp{Now: t0}))
	Forget(j, Record{})
	must.Eq(t, map[string]string{Class: "low"}, j.Meta)
	must.True(t, *j.Stop)
	_, err := s.Verify(stored(j, t0))
	must.ErrorIs(t, err, ErrNoRecord)
}

func TestPreemptorsKept(t *testing.T) {
	var list []string
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "b"} {
		list = WithPreemptor(list, k)
	}
	must.Eq(t, []string{"c", "d", "e", "f", "g", "h", "i", "b"}, list)
}

func TestWriteRefusesJobWithoutID(t *testing.T) {
	j := MakeJob("x", "ml").Build()
	j.ID = nil
	must.ErrorIs(t, testSealer().Admit(j, Record{}, Stamp{Now: t0}), errNoJobID)
}

func TestParse(t *testing.T) {
	r := Parse(map[string]string{State: "weird", Requeues: "-3", QueuedAt: "yesterday", Epoch: "x", PreemptedBy: "  "})
	must.Eq(t, Record{}, r)
	r = Parse(map[string]string{State: StateQueued, Requeues: "4", Epoch: "7", PreemptedBy: "ml/a ml/b"})
	must.Eq(t, Record{State: StateQueued, Requeues: 4, Epoch: 7, PreemptedBy: []string{"ml/a", "ml/b"}}, r)
	must.Eq(t, "ml/b", r.LastPreemptor())
}

// TestAudit27_PreemptedByNamesNoOtherTenant: a victim's meta records its
// preemptors as opaque references, not as "ns/id".
func TestAudit27_PreemptedByNamesNoOtherTenant(t *testing.T) {
	s := testSealer()
	j := MakeJob("victim", "team-a").Build()
	must.NoError(t, s.Requeue(j, Record{State: StateAdmitted}, "ml-prod/secret-run", Stamp{Now: t0}))
	must.StrNotContains(t, j.Meta[PreemptedBy], "ml-prod")
	must.True(t, IsRef(j.Meta[PreemptedBy]))
	must.Eq(t, s.Ref("ml-prod/secret-run"), j.Meta[PreemptedBy])
	must.NotEq(t, s.Ref("ml-prod/secret-run"), s.Ref("ml-prod/other"))
	other, err := NewSealer([]byte("another key, also thirty-two bytes long"))
	must.NoError(t, err)
	must.NotEq(t, s.Ref("ml-prod/secret-run"), other.Ref("ml-prod/secret-run"), must.Sprint("keyed"))
}
