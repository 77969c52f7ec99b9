package jobmeta

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// admitted returns job j admitted by s at t0 and stored by Nomad at
// t0+delay.
func admitted(t *testing.T, s *Sealer, j *api.Job, delay time.Duration) *api.Job {
	t.Helper()
	must.NoError(t, s.Admit(j, Record{}, Stamp{Now: t0}))
	return stored(j, t0.Add(delay))
}

func TestVerifySealedJob(t *testing.T) {
	s := testSealer()
	j := admitted(t, s, MakeJob("train", "ml").GPUs(4).Meta(Class, "high").Build(), time.Second)
	r, err := s.Verify(j)
	must.NoError(t, err)
	must.True(t, r.Admitted())
	must.Eq(t, t0, r.AdmittedAt)
	must.False(t, *j.Stop)
}

// TestAudit11_SealRefusesWhatTheGovernorDidNotAdmit: every way of getting
// allot.state=admitted into Nomad without the governor admitting that
// version leaves the job unsealed (audit #11, #4, #22).
func TestAudit11_SealRefusesWhatTheGovernorDidNotAdmit(t *testing.T) {
	s := testSealer()
	cases := map[string]struct {
		job  func(t *testing.T) *api.Job
		want error
	}{
		"forged state, no seal": {
			job: func(t *testing.T) *api.Job {
				return MakeJob("x", "ml").Meta(State, StateAdmitted, AdmittedAt, t0.Format(time.RFC3339)).Submitted(t0).Build()
			},
			want: ErrUnsealed,
		},
		"forged seal": {
			job: func(t *testing.T) *api.Job {
				return MakeJob("x", "ml").Meta(State, StateAdmitted, Seal, "v1.1764504000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA").Submitted(t0).Build()
			},
			want: ErrBadSeal,
		},
		"garbage seal": {
			job: func(t *testing.T) *api.Job {
				return MakeJob("x", "ml").Meta(State, StateAdmitted, Seal, "v1..").Submitted(t0).Build()
			},
			want: ErrBadSeal,
		},
		"sealed with another key": {
			job: func(t *testing.T) *api.Job {
				other, err := NewSealer([]byte("another key, also thirty-two bytes long"))
				must.NoError(t, err)
				return admitted(t, other, MakeJob("x", "ml").Build(), 0)
			},
			want: ErrBadSeal,
		},
		"meta copied from another job": {
			job: func(t *testing.T) *api.Job {
				donor := admitted(t, s, MakeJob("small", "ml").Build(), 0)
				return MakeJob("x", "ml").Meta(donorMeta(donor)...).Submitted(t0).Build()
			},
			want: ErrBadSeal,
		},
		"meta copied to another namespace": {
			job: func(t *testing.T) *api.Job {
				donor := admitted(t, s, MakeJob("x", "ml").Build(), 0)
				return MakeJob("x", "prod").Meta(donorMeta(donor)...).Submitted(t0).Build()
			},
			want: ErrBadSeal,
		},
		"scaled straight to Nomad": {
			job: func(t *testing.T) *api.Job {
				j := admitted(t, s, MakeJob("x", "ml").Count(1).Build(), 0)
				j.TaskGroups[0].Count = pointer(8) // job scale keeps SubmitTime
				return j
			},
			want: ErrBadSeal,
		},
		"edited to more GPUs": {
			job: func(t *testing.T) *api.Job {
				j := admitted(t, s, MakeJob("x", "ml").GPUs(1).Build(), 0)
				j.TaskGroups[0].Tasks[0].Resources.Devices[0].Count = pointer(uint64(8))
				return j
			},
			want: ErrBadSeal,
		},
		"class raised to production": {
			job: func(t *testing.T) *api.Job {
				j := admitted(t, s, MakeJob("x", "ml").Meta(Class, "low").Build(), 0)
				j.Meta[Class] = "production"
				return j
			},
			want: ErrBadSeal,
		},
		"priority raised": {
			job: func(t *testing.T) *api.Job {
				j := admitted(t, s, MakeJob("x", "ml").Build(), 0)
				j.Priority = pointer(100)
				return j
			},
			want: ErrBadSeal,
		},
		"gang turned off": {
			job: func(t *testing.T) *api.Job {
				j := admitted(t, s, MakeJob("x", "ml").Build(), 0)
				j.Meta[Gang] = "false"
				return j
			},
			want: ErrBadSeal,
		},
		"extra allot key added": {
			job: func(t *testing.T) *api.Job {
				j := admitted(t, s, MakeJob("x", "ml").Build(), 0)
				j.Meta["Allot.State"] = StateAdmitted
				return j
			},
			want: ErrBadSeal,
		},
		"node pool moved": {
			job: func(t *testing.T) *api.Job {
				j := admitted(t, s, MakeJob("x", "ml").Build(), 0)
				j.NodePool = pointer("gpu")
				return j
			},
			want: ErrBadSeal,
		},
		"reverted long after (audit #22)": {
			job: func(t *testing.T) *api.Job {
				j := admitted(t, s, MakeJob("x", "ml").Build(), 0)
				return stored(j, t0.Add(3*time.Hour)) // revert registers the old version anew
			},
			want: ErrStale,
		},
		"replayed after a purge": {
			job: func(t *testing.T) *api.Job {
				j := admitted(t, s, MakeJob("x", "ml").Build(), 0)
				return stored(j, t0.Add(10*time.Minute))
			},
			want: ErrStale,
		},
		"stored before it was sealed": {
			job: func(t *testing.T) *api.Job {
				j := admitted(t, s, MakeJob("x", "ml").Build(), 0)
				return stored(j, t0.Add(-time.Minute))
			},
			want: ErrStale,
		},
		"no submit time": {
			job: func(t *testing.T) *api.Job {
				j := admitted(t, s, MakeJob("x", "ml").Build(), 0)
				j.SubmitTime = nil
				return j
			},
			want: ErrStale,
		},
		"no record at all": {
			job:  func(t *testing.T) *api.Job { return MakeJob("x", "ml").Meta("team", "a").Submitted(t0).Build() },
			want: ErrNoRecord,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := s.Verify(tc.job(t))
			must.ErrorIs(t, err, tc.want)
			must.Eq(t, Record{}, r)
		})
	}
}

// donorMeta is a job's meta as key/value pairs.
func donorMeta(j *api.Job) []string {
	var kv []string
	for k, v := range j.Meta {
		kv = append(kv, k, v)
	}
	return kv
}

// TestAudit4_PeriodicChildInheritsAdmittedMeta: Nomad copies a periodic
// parent's meta into every child (nomad/periodic.go), under another ID:
// the child is not admitted (audit #4).
func TestAudit4_PeriodicChildInheritsAdmittedMeta(t *testing.T) {
	s := testSealer()
	parent := admitted(t, s, MakeJob("nightly", "ml").Meta(Class, "production").Build(), 0)
	child := copyJob(parent)
	child.ID = pointer("nightly/periodic-1764504000")
	child.ParentID = pointer("nightly")
	child.SubmitTime = pointer(t0.UnixNano())
	_, err := s.Verify(child)
	must.ErrorIs(t, err, ErrBadSeal)
}

func TestVerifyWindow(t *testing.T) {
	s := testSealer()
	cases := map[string]struct {
		delay time.Duration
		ok    bool
	}{
		"at once":                 {0, true},
		"Nomad's clock behind":    {-DefaultMaxSkew + time.Second, true},
		"too far behind":          {-DefaultMaxSkew - time.Second, false},
		"slow write":              {DefaultMaxDelay, true},
		"slow write, clock ahead": {DefaultMaxDelay + DefaultMaxSkew - time.Second, true},
		"beyond the window":       {DefaultMaxDelay + DefaultMaxSkew + time.Second, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := s.Verify(admitted(t, s, MakeJob("x", "ml").Build(), tc.delay))
			must.Eq(t, tc.ok, err == nil, must.Sprintf("error: %v", err))
		})
	}
}

// TestShapeMatchesNomadDefaults: a submission with fields left for Nomad
// to fill in has the shape of the job Nomad stores with them filled, and
// Nomad's implied constraints do not change it.
func TestShapeMatchesNomadDefaults(t *testing.T) {
	sub := &api.Job{ID: pointer("x"), TaskGroups: []*api.TaskGroup{{Name: pointer("g"),
		Tasks: []*api.Task{{Name: "t", Resources: &api.Resources{Devices: []*api.RequestedDevice{{Name: "nvidia/gpu"}}}}}}}}
	st := &api.Job{ID: pointer("x"), Namespace: pointer("default"), Type: pointer("service"), Priority: pointer(50),
		NodePool: pointer("default"), Datacenters: []string{"*"},
		TaskGroups: []*api.TaskGroup{{Name: pointer("g"), Count: pointer(1),
			Constraints: []*api.Constraint{{LTarget: "${attr.nomad.service_discovery}", RTarget: "true", Operand: "="}},
			Tasks: []*api.Task{{Name: "t", Resources: &api.Resources{CPU: pointer(100), Cores: pointer(0), MemoryMB: pointer(300),
				Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: pointer(uint64(1))}}}}}}}}
	must.Eq(t, Shape(sub), Shape(st))
	cp := copyJob(st)
	cp.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: pointer(uint64(2))}}
	must.NotEq(t, Shape(st), Shape(cp))
	sub.Datacenters = []string{"dc2", "dc1"}
	st.Datacenters = []string{"dc1", "dc2"}
	must.Eq(t, Shape(sub), Shape(st))
}

func TestNilSealerVerifiesNothing(t *testing.T) {
	j := admitted(t, testSealer(), MakeJob("x", "ml").Build(), 0)
	var s *Sealer
	_, err := s.Verify(j)
	must.ErrorIs(t, err, ErrNoKey)
	must.ErrorIs(t, s.Admit(MakeJob("y", "ml").Build(), Record{}, Stamp{Now: t0}), ErrNoKey)
}

func TestNewSealerRefusesShortKeys(t *testing.T) {
	_, err := NewSealer([]byte("short"))
	must.Error(t, err)
	must.False(t, errors.Is(err, ErrNoKey))
}
