package jobmeta

import (
	"time"

	"github.com/hashicorp/nomad/api"
)

// testKey is a fixed admission key for tests.
var testKey = []byte("0123456789abcdef0123456789abcdef")

// t0 is the tests' fixed clock.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testSealer() *Sealer {
	s, err := NewSealer(testKey)
	if err != nil {
		panic(err)
	}
	return s
}

// jobBuilder builds api jobs for tests: MakeJob("train", "ml").GPUs(4)...
type jobBuilder struct{ j *api.Job }

func MakeJob(id, ns string) *jobBuilder {
	return &jobBuilder{j: &api.Job{
		ID: pointer(id), Namespace: pointer(ns), Type: pointer(api.JobTypeBatch), Priority: pointer(50),
		Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{
			Name: pointer("g"), Count: pointer(1),
			Tasks: []*api.Task{{Name: "t", Driver: "raw_exec", Resources: &api.Resources{CPU: pointer(100), MemoryMB: pointer(64)}}},
		}},
	}}
}

func (b *jobBuilder) GPUs(n uint64) *jobBuilder {
	b.j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: pointer(n)}}
	return b
}

func (b *jobBuilder) Count(n int) *jobBuilder { b.j.TaskGroups[0].Count = pointer(n); return b }

func (b *jobBuilder) Meta(kv ...string) *jobBuilder {
	if b.j.Meta == nil {
		b.j.Meta = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		b.j.Meta[kv[i]] = kv[i+1]
	}
	return b
}

// Submitted sets Nomad's SubmitTime, as Nomad's server does on register.
func (b *jobBuilder) Submitted(at time.Time) *jobBuilder {
	b.j.SubmitTime = pointer(at.UnixNano())
	return b
}

func (b *jobBuilder) Build() *api.Job { return b.j }

// stored returns a copy of j as Nomad would store it at time at.
func stored(j *api.Job, at time.Time) *api.Job {
	cp := copyJob(j)
	cp.SubmitTime = pointer(at.UnixNano())
	return cp
}

// copyJob copies the parts of a job the tests change.
func copyJob(j *api.Job) *api.Job {
	cp := *j
	cp.Meta = map[string]string{}
	for k, v := range j.Meta {
		cp.Meta[k] = v
	}
	cp.TaskGroups = nil
	for _, tg := range j.TaskGroups {
		g := *tg
		g.Tasks = nil
		for _, t := range tg.Tasks {
			tc := *t
			if t.Resources != nil {
				r := *t.Resources
				tc.Resources = &r
			}
			g.Tasks = append(g.Tasks, &tc)
		}
		cp.TaskGroups = append(cp.TaskGroups, &g)
	}
	return &cp
}

func pointer[T any](v T) *T { return &v }
