package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
)

func TestConvertJobReadsRequeueMeta(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		meta map[string]string
		want func(*engine.Job)
	}{
		"requeued victim": {
			meta: map[string]string{MetaState: StateQueued, MetaRequeues: "3", MetaRequeuedAt: at.Format(time.RFC3339Nano),
				MetaAdmittedAt: at.Add(-time.Hour).Format(time.RFC3339Nano), MetaPreemptedBy: "b/boss b/other"},
			want: func(j *engine.Job) {
				j.Requeues, j.RequeuedAt, j.AdmittedAt, j.PreemptedBy = 3, at, at.Add(-time.Hour), "b/boss b/other"
			},
		},
		"malformed values count as absent": {
			meta: map[string]string{MetaRequeues: "many", MetaRequeuedAt: "yesterday", MetaAdmittedAt: "-"},
			want: func(*engine.Job) {},
		},
		"negative requeues count as none": {meta: map[string]string{MetaRequeues: "-2"}, want: func(*engine.Job) {}},
		"allot.gang false is not a gang":  {meta: map[string]string{MetaGang: " False "}, want: func(j *engine.Job) { j.NoGang = true }},
		"allot.gang true stays a gang":    {meta: map[string]string{MetaGang: "true"}, want: func(*engine.Job) {}},
		"no meta: a gang never requeued":  {meta: nil, want: func(*engine.Job) {}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := api.NewBatchJob("j", "j", "global", 50)
			j.Meta = tc.meta
			got := ConvertJob(j)
			want := &engine.Job{}
			tc.want(want)
			must.Eq(t, want.Requeues, got.Requeues)
			must.Eq(t, want.RequeuedAt, got.RequeuedAt)
			must.Eq(t, want.AdmittedAt, got.AdmittedAt)
			must.Eq(t, want.PreemptedBy, got.PreemptedBy)
			must.Eq(t, want.NoGang, got.NoGang)
		})
	}
}

func TestAllocCarriesStartAndLastCheckpoint(t *testing.T) {
	started := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	saved := started.Add(90 * time.Second)
	a := &api.Allocation{ID: "a1", Namespace: "ml", JobID: "train", TaskGroup: "g", NodeID: "n1",
		DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning,
		TaskStates: map[string]*api.TaskState{
			"train": {StartedAt: started.Add(time.Second), Events: []*api.TaskEvent{
				{Time: started.Add(30 * time.Second).UnixNano(), DisplayMessage: "Checkpoint saved: /c/1 step 10 (1s)"},
				{Time: saved.UnixNano(), DisplayMessage: "Checkpoint saved: /c/2 step 20 (1s)"},
				{Time: saved.Add(time.Second).UnixNano(), DisplayMessage: "Checkpoint requested"},
			}},
			"sidecar": {StartedAt: started},
		}}
	s := NewStore(nil, nil)
	s.Reset(&Initial{Allocs: []*api.Allocation{a}})
	snap := s.Snapshot(started)
	must.SliceLen(t, 1, snap.Allocs)
	got := snap.Allocs[0]
	must.True(t, got.Started)
	must.Eq(t, started, got.StartedAt, must.Sprint("the first task's start"))
	must.Eq(t, saved.UnixNano(), got.LastCheckpoint.UnixNano())

	pending := *a
	pending.ClientStatus, pending.TaskStates = api.AllocClientStatusPending, nil
	c := ConvertAlloc(&pending)
	must.False(t, c.Started)
	must.True(t, c.StartedAt.IsZero())
}
