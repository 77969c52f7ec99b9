package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

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
