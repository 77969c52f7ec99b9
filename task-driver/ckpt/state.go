package ckpt

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/nomad/plugins/drivers"
	pstructs "github.com/hashicorp/nomad/plugins/shared/structs"
)

// stateVersion is the version of TaskState; RecoverTask refuses others.
const stateVersion = 1

// TaskState is what the driver persists in the TaskHandle so RecoverTask
// can reattach to the executor after the plugin or the client restarts.
type TaskState struct {
	// Version guards the layout of this struct.
	Version int
	// ReattachConfig locates the executor plugin process.
	ReattachConfig *pstructs.ReattachConfig
	// TaskConfig is the task's config as given to StartTask.
	TaskConfig *drivers.TaskConfig
	// Pid is the task's main process, which also leads its process group.
	Pid int
	// StartedAt is when the task started.
	StartedAt time.Time
	// CheckpointDir is the task's checkpoint directory.
	CheckpointDir string
	// CheckpointSignal is the name of the checkpoint signal.
	CheckpointSignal string
	// CheckpointTimeout bounds the checkpoint wait on stop.
	CheckpointTimeout time.Duration
	// Isolation is the isolation mode the task was started with; empty
	// in states written before it existed, which ran without isolation.
	Isolation string
	// PidStartTicks and PidBootID identify the process Pid named at start
	// (see procIdentity); RecoverTask touches Pid only while they still
	// match. States written before they existed leave them zero, and such
	// a pid is never moved into cgroups nor signalled as a group.
	PidStartTicks uint64
	PidBootID     string
	// CheckpointUID is the uid LATEST must belong to; nil in states written
	// before it existed (the task's user is looked up again).
	CheckpointUID *int
}

// identity is the recorded identity of Pid (zero when none was recorded).
func (st *TaskState) identity() procIdentity {
	return procIdentity{StartTicks: st.PidStartTicks, BootID: st.PidBootID}
}

// ErrStateVersion is returned when a handle holds state of another version.
var ErrStateVersion = errors.New("unsupported ckpt task state version")

// decodeState reads and checks the state in a handle.
func decodeState(h *drivers.TaskHandle) (*TaskState, error) {
	if h == nil {
		return nil, errors.New("task handle is nil")
	}
	var st TaskState
	if err := h.GetDriverState(&st); err != nil {
		return nil, fmt.Errorf("decoding ckpt task state: %w", err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("%w %d (want %d)", ErrStateVersion, st.Version, stateVersion)
	}
	if st.ReattachConfig == nil || st.TaskConfig == nil || st.Pid <= 0 || st.CheckpointDir == "" {
		return nil, fmt.Errorf("ckpt task state is incomplete: %+v", st)
	}
	if _, _, err := parseSignal(st.CheckpointSignal); err != nil {
		return nil, fmt.Errorf("ckpt task state: %w", err)
	}
	return &st, nil
}

// taskStore maps task IDs to running tasks.
type taskStore struct {
	mu    sync.RWMutex
	tasks map[string]*taskHandle
}

func newTaskStore() *taskStore { return &taskStore{tasks: map[string]*taskHandle{}} }

func (s *taskStore) get(id string) (*taskHandle, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.tasks[id]
	return h, ok
}

func (s *taskStore) set(id string, h *taskHandle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks[id] = h
}

func (s *taskStore) delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tasks, id)
}

// runningIn returns the ID of a running task other than id whose
// checkpoint directory is dir, if any.
func (s *taskStore) runningIn(dir, id string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for other, h := range s.tasks {
		if other != id && h.ckptDir == dir && h.IsRunning() {
			return h.taskConfig.AllocID, true
		}
	}
	return "", false
}
