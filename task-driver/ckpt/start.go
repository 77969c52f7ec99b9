package ckpt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/consul-template/signals"
	"github.com/hashicorp/nomad/drivers/shared/executor"
	"github.com/hashicorp/nomad/plugins/drivers"
	pstructs "github.com/hashicorp/nomad/plugins/shared/structs"

	"github.com/allot-sh/allot/contract/ckptevent"
)

// StartTask validates the task's config, prepares its checkpoint directory
// and environment, and launches it through a new executor.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, *drivers.DriverNetwork, error) {
	if !d.configured {
		return nil, nil, errors.New("ckpt driver is not configured")
	}
	if _, ok := d.tasks.get(cfg.ID); ok {
		return nil, nil, fmt.Errorf("task with ID %q already started", cfg.ID)
	}
	var tc TaskConfig
	if err := cfg.DecodeDriverConfig(&tc); err != nil {
		return nil, nil, fmt.Errorf("decoding ckpt task config: %w", err)
	}
	ts, err := tc.validate(d.settings)
	if err != nil {
		return nil, nil, err
	}
	// The task runs as the user the rules allow, and its checkpoint dir
	// is that user's: every later step reads cfg.User.
	if cfg.User, err = d.settings.users.resolve(cfg.Namespace, cfg.User); err != nil {
		return nil, nil, err
	}
	emit := d.emitter(cfg)
	if ev, ok := ts.startWarning(d.settings); ok {
		emit(ev)
	}
	dir, owner, latest, err := d.prepareCheckpoint(cfg, emit)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range taskEnv(dir, ts.signalName, latest) {
		cfg.Env[k] = v
	}
	h, err := d.launch(cfg, &tc, ts, dir, emit)
	if err != nil {
		return nil, nil, err
	}
	d.identify(h, owner)
	d.enforceLimits(h, cfg)
	handle, err := d.persist(cfg, h)
	if err != nil {
		_ = h.exec.Shutdown("", 0)
		h.pluginClient.Kill()
		return nil, nil, err
	}
	if latest != nil {
		emit(resumeEvent(*latest))
	}
	d.tasks.set(cfg.ID, h)
	d.startBackground(h)
	return handle, nil, nil
}

// prepareCheckpoint creates the task's checkpoint dir for the task's user
// (cfg.User) and reads its LATEST. A malformed or untrusted LATEST is
// reported as an event and ignored: the task starts from scratch rather
// than not at all, and the file is left as it is.
func (d *Driver) prepareCheckpoint(cfg *drivers.TaskConfig, emit func(event)) (string, dirOwner, *Latest, error) {
	if cfg.Env == nil {
		cfg.Env = map[string]string{}
	}
	index := cfg.Env["NOMAD_ALLOC_INDEX"]
	if _, err := strconv.ParseUint(index, 10, 32); err != nil {
		return "", dirOwner{}, nil, fmt.Errorf("task env has no valid NOMAD_ALLOC_INDEX (%q): %w", index, err)
	}
	owner, err := ownerOf(cfg.User)
	if err != nil {
		return "", dirOwner{}, nil, fmt.Errorf("checkpoint dir: %w", err)
	}
	loc := Location{Namespace: cfg.Namespace, Job: cfg.JobID, Group: cfg.TaskGroupName, AllocIndex: index, Task: cfg.Name}
	dir, err := prepareDir(d.settings.root, loc, owner)
	if err != nil {
		return "", dirOwner{}, nil, err
	}
	// Two allocations of one index can run at once (canaries, rolling
	// updates of service jobs); they would overwrite each other's LATEST.
	if alloc, ok := d.tasks.runningIn(dir, cfg.ID); ok {
		emit(warningEvent("allocation %s on this node is running in the same checkpoint directory %s; "+
			"both will replace its LATEST", alloc, dir))
	}
	l, err := ReadLatest(dir, owner.uid)
	switch {
	case err == nil:
		return dir, owner, &l, nil
	case errors.Is(err, fs.ErrNotExist):
		return dir, owner, nil, nil
	default:
		emit(warningEvent("ignoring unreadable %s, starting without a checkpoint: %v", LatestFile, err))
		return dir, owner, nil, nil
	}
}

// launch starts an executor (this binary re-executed) and the task in it.
func (d *Driver) launch(cfg *drivers.TaskConfig, tc *TaskConfig, ts taskSettings, dir string, emit func(event)) (*taskHandle, error) {
	logger := d.logger.With("task_name", cfg.Name, "alloc_id", cfg.AllocID)
	exec, client, err := executor.CreateExecutor(logger, d.nomadConfig, &executor.ExecutorConfig{
		LogFile:     filepath.Join(cfg.TaskDir().Dir, "executor.out"),
		LogLevel:    "debug",
		FSIsolation: d.settings.isolated(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating executor: %w", err)
	}
	ps, devs, err := d.launchWithDevices(exec, d.execCommand(cfg, tc, cfg.User, dir), cfg, emit)
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("launching %s with the executor: %w", tc.Command, err)
	}
	h := d.newHandle(cfg, ts, dir, emit)
	h.exec, h.pluginClient, h.pid = exec, client, ps.Pid
	h.isolated, h.devices = d.settings.isolated(), devs
	h.startedAt = d.clock.Now().Round(time.Millisecond)
	return h, nil
}

func (d *Driver) newHandle(cfg *drivers.TaskConfig, ts taskSettings, dir string, emit func(event)) *taskHandle {
	return &taskHandle{
		logger: d.logger.With("task_id", cfg.ID, "task_name", cfg.Name), clock: d.clock, emit: emit,
		ckptDir: dir, signal: ts.signal, signalName: ts.signalName, ckptTimeout: ts.timeout,
		poll: d.settings.pollInterval, savedInterval: d.settings.savedInterval,
		doneCh: make(chan struct{}), taskConfig: cfg, procState: drivers.TaskStateRunning,
		exitResult: &drivers.ExitResult{},
	}
}

// persist records what RecoverTask needs in a new handle.
func (d *Driver) persist(cfg *drivers.TaskConfig, h *taskHandle) (*drivers.TaskHandle, error) {
	handle := drivers.NewTaskHandle(taskHandleVersion)
	handle.Config = cfg
	st := TaskState{
		Version:           stateVersion,
		ReattachConfig:    pstructs.ReattachConfigFromGoPlugin(h.pluginClient.ReattachConfig()),
		TaskConfig:        cfg,
		Pid:               h.pid,
		StartedAt:         h.startedAt,
		CheckpointDir:     h.ckptDir,
		CheckpointSignal:  h.signalName,
		CheckpointTimeout: h.ckptTimeout,
		Isolation:         isolationOf(h),
		PidStartTicks:     h.guard.want.StartTicks,
		PidBootID:         h.guard.want.BootID,
		CheckpointUID:     &h.ckptUID,
	}
	if err := handle.SetDriverState(&st); err != nil {
		return nil, fmt.Errorf("saving ckpt task state: %w", err)
	}
	return handle, nil
}

// startBackground starts waiting for the task and watching its LATEST.
func (d *Driver) startBackground(h *taskHandle) {
	ctx, cancel := context.WithCancel(d.ctx)
	h.cancelWatch = cancel
	go h.run()
	go h.watch(ctx)
}

// SignalTask sends a signal to the task's main process, as the executor
// does for Nomad's exec drivers. Allot's idle pseudo-signals (ALLOT_IDLE_*)
// become task events instead and never reach the process (idlesignal.go).
func (d *Driver) SignalTask(taskID string, signal string) error {
	h, ok := d.tasks.get(taskID)
	if !ok {
		return drivers.ErrTaskNotFound
	}
	if ckptevent.IsIdleSignal(signal) {
		return h.idleNotice(signal)
	}
	sig, ok := signals.SignalLookup[signal]
	if !ok {
		return fmt.Errorf("%w %q", ErrBadSignal, signal)
	}
	return h.exec.Signal(sig)
}

// ExecTask runs a command in the task's context.
func (d *Driver) ExecTask(taskID string, cmd []string, timeout time.Duration) (*drivers.ExecTaskResult, error) {
	if len(cmd) == 0 {
		return nil, errors.New("exec: command must have at least one element")
	}
	h, ok := d.tasks.get(taskID)
	if !ok {
		return nil, drivers.ErrTaskNotFound
	}
	if h.isolated {
		return execAsTaskUser(d.ctx, h.exec, cmd, timeout)
	}
	out, code, err := h.exec.Exec(time.Now().Add(timeout), cmd[0], cmd[1:])
	if err != nil {
		return nil, fmt.Errorf("exec in task %s: %w", taskID, err)
	}
	return &drivers.ExecTaskResult{Stdout: out, ExitResult: &drivers.ExitResult{ExitCode: code}}, nil
}

var _ drivers.ExecTaskStreamingRawDriver = (*Driver)(nil)

// ExecTaskStreamingRaw runs an interactive command (nomad alloc exec).
func (d *Driver) ExecTaskStreamingRaw(ctx context.Context, taskID string, command []string, tty bool, stream drivers.ExecTaskStream) error {
	if len(command) == 0 {
		return errors.New("exec: command must have at least one element")
	}
	h, ok := d.tasks.get(taskID)
	if !ok {
		return drivers.ErrTaskNotFound
	}
	return h.exec.ExecStreaming(ctx, command, tty, stream)
}
