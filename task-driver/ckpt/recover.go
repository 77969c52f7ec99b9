package ckpt

import (
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/hashicorp/nomad/drivers/shared/executor"
	"github.com/hashicorp/nomad/plugins/drivers"
	pstructs "github.com/hashicorp/nomad/plugins/shared/structs"
)

// MsgPidNotVerified starts the event sent when a recovered task's recorded
// pid cannot be shown to be the task; the reason follows.
const MsgPidNotVerified = "Recovered task pid not verified: "

// identify records, right after launch, which process the task's pid is
// and whose LATEST files the handle trusts.
func (d *Driver) identify(h *taskHandle, owner dirOwner) {
	h.ckptUID = owner.uid
	h.guard = pidGuard{procRoot: defaultProcRoot, pid: h.pid}
	id, err := readProcIdentity(defaultProcRoot, h.pid)
	if err != nil {
		// The task is never moved into cgroups nor signalled as a group
		// then; the executor still signals and stops its own child.
		h.logger.Warn("cannot identify the task's process", "pid", h.pid, "error", err)
		return
	}
	h.guard.want = id
}

// RecoverTask reattaches to the executor of a task started before the
// plugin (or the Nomad client) restarted. The recorded pid is touched
// (moved into cgroups, its process group signalled) only while its start
// time and boot id still match what StartTask recorded. Otherwise the task
// has exited while nobody watched and the pid may be another process's:
// the driver leaves that pid alone, says so in an event, and takes the
// task's exit from the executor, which reaped its own child; Nomad then
// records the exit and applies the restart policy, as for raw_exec.
func (d *Driver) RecoverTask(handle *drivers.TaskHandle) error {
	if handle == nil || handle.Config == nil {
		return errors.New("recovering ckpt task: handle or its config is nil")
	}
	if _, ok := d.tasks.get(handle.Config.ID); ok {
		return nil
	}
	st, err := decodeState(handle)
	if err != nil {
		return fmt.Errorf("recovering task %s: %w", handle.Config.ID, err)
	}
	uid, err := recoveredOwner(st)
	if err != nil {
		return fmt.Errorf("recovering task %s: %w", handle.Config.ID, err)
	}
	rc, err := pstructs.ReattachConfigToGoPlugin(st.ReattachConfig)
	if err != nil {
		return fmt.Errorf("recovering task %s: reattach config: %w", handle.Config.ID, err)
	}
	logger := d.logger.With("task_name", st.TaskConfig.Name, "alloc_id", st.TaskConfig.AllocID)
	exec, client, err := executor.ReattachToExecutor(rc, logger)
	if err != nil {
		return fmt.Errorf("recovering task %s: reattaching to executor: %w", handle.Config.ID, err)
	}
	name, sig, _ := parseSignal(st.CheckpointSignal)
	held := &heldEvents{emit: d.emitter(st.TaskConfig)}
	h := d.newHandle(st.TaskConfig, taskSettings{signal: sig, signalName: name, timeout: st.CheckpointTimeout},
		st.CheckpointDir, held.send)
	h.held = held
	h.exec, h.pluginClient, h.pid, h.startedAt = exec, client, st.Pid, st.StartedAt
	h.ckptUID = uid
	h.isolated = st.Isolation == IsolationChroot
	h.devices = recoveredDevices(st.TaskConfig, h.isolated)
	h.guard = pidGuard{procRoot: defaultProcRoot, pid: st.Pid, want: st.identity()}
	if err := h.guard.check(); err != nil {
		d.logger.Warn("recovered task's pid is not verified; leaving it alone", "task_id", st.TaskConfig.ID, "pid", st.Pid, "error", err)
		h.emit(event{msg: MsgPidNotVerified + err.Error() + "; it is not moved into cgroups nor signalled, " +
			"signals go through the executor to its own child"})
	}
	d.enforceLimits(h, st.TaskConfig)
	d.tasks.set(st.TaskConfig.ID, h)
	d.startBackground(h)
	d.logger.Info("recovered task", "task_id", st.TaskConfig.ID, "pid", st.Pid, "checkpoint_dir", st.CheckpointDir)
	return nil
}

// heldEvents holds a recovered task's events until the client waits for
// the task. Nomad 1.6 calls RecoverTask while it restores the allocation,
// before it registers the task's event handler, and drops what the driver
// emits meanwhile ("no handler registered for event"); the task runner
// calls WaitTask once the allocation runs, and release sends them then.
type heldEvents struct {
	emit func(event)

	mu       sync.Mutex
	held     []event
	released bool
}

// send emits ev, or holds it until release.
func (e *heldEvents) send(ev event) {
	e.mu.Lock()
	if !e.released {
		e.held = append(e.held, ev)
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	e.emit(ev)
}

// release emits what was held and lets later events through; a nil
// receiver (a task this driver started) does nothing.
func (e *heldEvents) release() {
	if e == nil {
		return
	}
	e.mu.Lock()
	held := e.held
	e.held, e.released = nil, true
	e.mu.Unlock()
	for _, ev := range held {
		e.emit(ev)
	}
}

// recoveredOwner is the uid LATEST must belong to: recorded, or for older
// states the task user's again.
func recoveredOwner(st *TaskState) (int, error) {
	if st.CheckpointUID != nil {
		return *st.CheckpointUID, nil
	}
	o, err := ownerOf(st.TaskConfig.User)
	if err != nil {
		return 0, fmt.Errorf("checkpoint owner: %w", err)
	}
	return o.uid, nil
}

// signalUnverified signals a task whose pid is not verified through the
// executor, which signals only its own child and refuses once it has
// reaped it, so a recycled pid is never hit. Only the main process gets
// the signal, not its process group.
func (h *taskHandle) signalUnverified(sig syscall.Signal, why error) error {
	h.logger.Debug("signalling the main process through the executor", "pid", h.pid, "signal", sig, "reason", why)
	return h.exec.Signal(sig)
}

// executorShutdownSafe says whether the executor may be asked to shut
// down. Without cgroups, its shutdown SIGKILLs the process group of the
// task's pid even after the task has exited; once that pid names another
// process, only the executor plugin is killed.
func (h *taskHandle) executorShutdownSafe() bool {
	err := h.guard.check()
	if err == nil {
		return true
	}
	exited := false
	select {
	case <-h.doneCh:
		exited = true
	default:
	}
	if !h.guard.want.known() && !exited {
		return true // an older state: the executor's child still runs under this pid
	}
	if !h.guard.occupied() {
		return true
	}
	h.logger.Warn("not asking the executor to shut down: the task's pid names another process", "pid", h.pid, "reason", err)
	return false
}
