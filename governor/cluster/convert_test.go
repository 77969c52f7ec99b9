package cluster

import (
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/contract/ckptevent"
)

func TestAllocCarriesStartAndLastCheckpoint(t *testing.T) {
	started := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	saved := started.Add(90 * time.Second) // whole seconds: the contract carries Unix seconds
	a := &api.Allocation{ID: "a1", Namespace: "ml", JobID: "train", TaskGroup: "g", NodeID: "n1",
		DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning,
		TaskStates: map[string]*api.TaskState{
			"train": {StartedAt: started.Add(time.Second), Events: []*api.TaskEvent{
				savedEvent(started.Add(30*time.Second), "/c/1"),
				savedEvent(saved, "/c/2"),
				// The event's own time does not count: the checkpoint's does.
				{Time: saved.Add(time.Hour).UnixNano(), DisplayMessage: "Checkpoint saved: /c/3 (1s)"},
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

// savedEvent is a Saved event as Nomad 1.6.1 shows a driver event: type
// "Driver", the message in DriverMessage and DisplayMessage, the driver's
// annotations in Details; logged a second after the checkpoint was written.
func savedEvent(written time.Time, path string) *api.TaskEvent {
	msg := ckptevent.Saved + path + " (1s)"
	return &api.TaskEvent{Type: "Driver", Time: written.Add(time.Second).UnixNano(), DriverMessage: msg, DisplayMessage: msg,
		Details: map[string]string{ckptevent.Path: path, ckptevent.UnixTime: strconv.FormatInt(written.Unix(), 10)}}
}
