package ckpt

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/plugins/drivers"
	pstructs "github.com/hashicorp/nomad/plugins/shared/structs"
	"github.com/shoenig/test/must"
)

func validState() *TaskState {
	return &TaskState{
		Version:           stateVersion,
		ReattachConfig:    &pstructs.ReattachConfig{Network: "unix", Addr: "/tmp/plugin.sock", Pid: 4242},
		TaskConfig:        &drivers.TaskConfig{ID: "task-1", Name: "train", AllocID: "alloc-1"},
		Pid:               4343,
		StartedAt:         time.Unix(1_700_000_000, 0).UTC(),
		CheckpointDir:     "/ck/default/train/g/0/train",
		CheckpointSignal:  "SIGUSR2",
		CheckpointTimeout: 90 * time.Second,
	}
}

func TestStateRoundTrip(t *testing.T) {
	h := drivers.NewTaskHandle(taskHandleVersion)
	want := validState()
	must.NoError(t, h.SetDriverState(want))
	h = h.Copy()
	got, err := decodeState(h)
	must.NoError(t, err)
	must.Eq(t, want.Pid, got.Pid)
	must.Eq(t, want.ReattachConfig, got.ReattachConfig)
	must.Eq(t, want.TaskConfig.ID, got.TaskConfig.ID)
	must.Eq(t, want.CheckpointDir, got.CheckpointDir)
	must.Eq(t, want.CheckpointSignal, got.CheckpointSignal)
	must.Eq(t, want.CheckpointTimeout, got.CheckpointTimeout)
	must.True(t, want.StartedAt.Equal(got.StartedAt))
}

func TestDecodeStateRejects(t *testing.T) {
	cases := map[string]func(*TaskState){
		"other version":   func(s *TaskState) { s.Version = 2 },
		"no reattach":     func(s *TaskState) { s.ReattachConfig = nil },
		"no pid":          func(s *TaskState) { s.Pid = 0 },
		"no dir":          func(s *TaskState) { s.CheckpointDir = "" },
		"bad signal name": func(s *TaskState) { s.CheckpointSignal = "SIGNOPE" },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			st := validState()
			edit(st)
			h := drivers.NewTaskHandle(taskHandleVersion)
			must.NoError(t, h.SetDriverState(st))
			_, err := decodeState(h)
			must.Error(t, err)
		})
	}
	_, err := decodeState(nil)
	must.Error(t, err)
}
