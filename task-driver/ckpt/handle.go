package ckpt

import (
	"context"
	"errors"
	"io/fs"
	"strconv"
	"sync"
	"syscall"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/nomad/drivers/shared/executor"
	"github.com/hashicorp/nomad/plugins/drivers"
)

// forceWait bounds the wait for a task after SIGKILL.
const forceWait = 15 * time.Second

// taskHandle is one running task: its executor, its process group and the
// watcher of its LATEST file.
type taskHandle struct {
	exec         executor.Executor
	pluginClient *plugin.Client
	pid          int
	logger       hclog.Logger
	clock        Clock
	emit         func(event)
	limiter      limiter // nil when limits are not enforced
	// isolated is set when the task runs in the isolating executor.
	isolated bool
	devices  *deviceCgroup // nil without a devices cgroup of its own
	// guard tells whether pid is still the task's process (recover.go).
	guard pidGuard
	// ckptUID is the uid LATEST must belong to.
	ckptUID int
	// held, for a recovered task, holds the events of RecoverTask until
	// the client can take them (recover.go); nil for started tasks.
	held *heldEvents

	ckptDir       string
	signal        syscall.Signal
	signalName    string
	ckptTimeout   time.Duration
	poll          time.Duration
	savedInterval time.Duration

	cancelWatch context.CancelFunc
	doneCh      chan struct{}
	stopMu      sync.Mutex

	// mu guards the fields below.
	mu          sync.RWMutex
	taskConfig  *drivers.TaskConfig
	procState   drivers.TaskState
	startedAt   time.Time
	completedAt time.Time
	exitResult  *drivers.ExitResult
	stopping    bool
}

// TaskStatus reports the task for InspectTask.
func (h *taskHandle) TaskStatus() *drivers.TaskStatus {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return &drivers.TaskStatus{
		ID:          h.taskConfig.ID,
		Name:        h.taskConfig.Name,
		State:       h.procState,
		StartedAt:   h.startedAt,
		CompletedAt: h.completedAt,
		ExitResult:  h.exitResult.Copy(),
		DriverAttributes: map[string]string{
			"pid":               strconv.Itoa(h.pid),
			"checkpoint_dir":    h.ckptDir,
			"checkpoint_signal": h.signalName,
		},
	}
}

// IsRunning says whether the task's process is still running.
func (h *taskHandle) IsRunning() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.procState == drivers.TaskStateRunning
}

// run waits for the task's process to exit and records how it ended.
func (h *taskHandle) run() {
	defer close(h.doneCh)
	defer h.cancelWatch()
	ps, err := h.exec.Wait(context.Background())
	h.mu.Lock()
	defer h.mu.Unlock()
	h.completedAt = h.clock.Now()
	if err != nil {
		h.exitResult = &drivers.ExitResult{Err: err}
		h.procState = drivers.TaskStateUnknown
		return
	}
	h.procState = drivers.TaskStateExited
	h.exitResult = &drivers.ExitResult{ExitCode: ps.ExitCode, Signal: ps.Signal, OOMKilled: h.oomKilled()}
	h.completedAt = ps.Time
}

// Exited is closed once the task's process has exited.
func (h *taskHandle) Exited() <-chan struct{} { return h.doneCh }

// SignalGroup signals the task's whole process group. The executor starts
// the task with Setpgid, so its pid is also its process group id; a
// negative pid addresses the group. A task that has exited is never
// signalled, and a pid whose start time no longer matches the task's (or
// was never recorded) is only signalled through the executor, so a
// recycled pid cannot be hit.
func (h *taskHandle) SignalGroup(sig syscall.Signal) error {
	select {
	case <-h.doneCh:
		return syscall.ESRCH
	default:
	}
	if err := h.guard.check(); err != nil {
		return h.signalUnverified(sig, err)
	}
	if err := syscall.Kill(-h.pid, sig); err != nil {
		h.logger.Debug("signalling process group failed", "pgid", h.pid, "signal", sig, "error", err)
		return err
	}
	return nil
}

// readLatest reads the task's LATEST file.
func (h *taskHandle) readLatest() (Latest, error) { return ReadLatest(h.ckptDir, h.ckptUID) }

// stop runs the stop protocol, then has the executor clean up whatever is
// left of the task (its cgroup and stray processes).
func (h *taskHandle) stop(timeout time.Duration, signal string) error {
	h.stopMu.Lock()
	defer h.stopMu.Unlock()
	select {
	case <-h.doneCh:
		return h.shutdownExecutor()
	default:
	}
	h.setStopping()
	ks, err := killSignal(signal)
	if err != nil {
		h.emit(warningEvent("kill_signal %q is unknown; using SIGINT", signal))
		ks = syscall.SIGINT
	}
	s := &stopper{
		plan: stopPlan{
			checkpointSignal: h.signal, signalName: h.signalName, checkpointTimeout: h.ckptTimeout,
			killSignal: ks, killTimeout: timeout, poll: h.poll, forceWait: forceWait,
		},
		proc: h, clock: h.clock, readLast: h.readLatest, emit: h.emit,
	}
	if l, err := h.readLatest(); err == nil {
		s.baseline = &l
	}
	out := s.run()
	h.logger.Info("task stopped", "checkpoint_saved", out.Saved, "timed_out", out.TimedOut,
		"kill_signal_sent", out.KillSignalSent, "killed", out.Killed)
	return h.shutdownExecutor()
}

// shutdownExecutor kills what is left of the task and waits for run.
func (h *taskHandle) shutdownExecutor() error {
	if !h.pluginClient.Exited() && h.executorShutdownSafe() {
		if err := h.exec.Shutdown("", 0); err != nil && !h.pluginClient.Exited() {
			h.logger.Warn("executor shutdown failed", "error", err)
		}
	}
	select {
	case <-h.doneCh:
	case <-h.clock.After(forceWait):
		h.logger.Warn("task did not report its exit after shutdown")
	}
	h.pluginClient.Kill()
	return nil
}

func (h *taskHandle) setStopping() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopping = true
}

func (h *taskHandle) isStopping() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.stopping
}

// watch reports checkpoints the task writes on its own, at most one event
// per savedInterval; a checkpoint held back by the limit is reported when
// the interval is over, so the newest one is never lost. During a stop the
// stop protocol reports checkpoints itself.
func (h *taskHandle) watch(ctx context.Context) {
	w := latestWatcher{interval: h.savedInterval}
	if l, err := h.readLatest(); err == nil {
		w.seen, w.prevTime = &l, l.ModTime
	} else {
		w.prevTime = h.startedAtTime()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.clock.After(h.poll):
		}
		if h.isStopping() {
			return
		}
		l, err := h.readLatest()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.logger.Debug("reading LATEST", "error", err)
		}
		if ev, ok := w.observe(l, err == nil, h.clock.Now()); ok {
			h.emit(ev)
		}
	}
}

func (h *taskHandle) startedAtTime() time.Time {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.startedAt
}

// latestWatcher decides which LATEST changes become events.
type latestWatcher struct {
	interval time.Duration
	seen     *Latest
	pending  *Latest
	prevTime time.Time
	lastEmit time.Time
}

// observe takes one read of LATEST (ok false when there was none) and
// returns the event to emit, if any.
func (w *latestWatcher) observe(l Latest, ok bool, now time.Time) (event, bool) {
	if ok && (w.seen == nil || !l.Same(*w.seen)) {
		cp := l
		w.seen, w.pending = &cp, &cp
	}
	if w.pending == nil || (!w.lastEmit.IsZero() && now.Sub(w.lastEmit) < w.interval) {
		return event{}, false
	}
	p := *w.pending
	ev := savedEvent(p, p.ModTime.Sub(w.prevTime), triggerPeriodic)
	w.prevTime, w.lastEmit, w.pending = p.ModTime, now, nil
	return ev, true
}
