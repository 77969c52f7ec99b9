package ckpt

import (
	"os"
	"runtime"

	"github.com/hashicorp/nomad/plugins/drivers"
)

// defaultLimiter enforces limits through the host's cgroup filesystem.
func defaultLimiter(cfg *drivers.TaskConfig) limiter {
	return newCgroupLimiter(defaultCgroupRoot, defaultProcRoot, cfg.AllocID, cfg.Name)
}

// limitsUnsupported says why this plugin cannot enforce limits at all; it
// is empty when it can try.
func (d *Driver) limitsUnsupported() string {
	switch {
	case d.settings.noCgroups:
		return "no_cgroups is set in the plugin config"
	case runtime.GOOS != "linux":
		return "cgroups need Linux, this is " + runtime.GOOS
	case os.Geteuid() != 0:
		return "the plugin does not run as root"
	}
	return ""
}

// enforceLimits puts the task's process under its memory limit and CPU
// weight. When that is not possible the task keeps running, and a task
// event and a log line say why; it is never a silent no-op.
func (d *Driver) enforceLimits(h *taskHandle, cfg *drivers.TaskConfig) {
	l := limitsFor(cfg.Resources)
	if l == (limits{}) {
		return
	}
	reason := d.limitsUnsupported()
	if reason == "" {
		// Never move a process that is not shown to be the task's (audit #28).
		if err := h.guard.check(); err != nil {
			reason = err.Error()
		}
	}
	if reason == "" {
		lim := d.newLimiter(cfg)
		h.limiter = lim // kept even after a failure: Remove cleans up a partial Apply
		err := lim.Apply(h.pid, l)
		if err == nil {
			h.logger.Debug("resource limits enforced", "pid", h.pid,
				"memory_bytes", l.memoryBytes, "cpu_shares", l.cpuShares)
			return
		}
		reason = err.Error()
	}
	h.logger.Warn("resource limits not enforced", "pid", h.pid, "reason", reason)
	h.emit(event{msg: MsgLimitsNotEnforced + reason})
}

// removeLimits removes the task's cgroups once it is gone: a cgroup with
// processes in it cannot be removed.
func (h *taskHandle) removeLimits() {
	if h.limiter == nil {
		return
	}
	select {
	case <-h.doneCh:
	case <-h.clock.After(forceWait):
		h.logger.Warn("task did not report its exit; removing its cgroups anyway")
	}
	if err := h.limiter.Remove(); err != nil {
		h.logger.Warn("removing the task's cgroups", "error", err)
	}
}

// oomKilled says whether the memory limit got the task killed.
func (h *taskHandle) oomKilled() bool {
	return h.limiter != nil && h.limiter.OOMKilled()
}
