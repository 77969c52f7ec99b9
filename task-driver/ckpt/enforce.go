package ckpt

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

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
	if h.isolated {
		d.observeLimits(h, cfg)
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
	if h.limiter == nil && h.devices == nil {
		return
	}
	select {
	case <-h.doneCh:
	case <-h.clock.After(forceWait):
		h.logger.Warn("task did not report its exit; removing its cgroups anyway")
	}
	if h.limiter != nil {
		if err := h.limiter.Remove(); err != nil {
			h.logger.Warn("removing the task's cgroups", "error", err)
		}
	}
	if err := h.devices.remove(); err != nil {
		h.logger.Warn("removing the task's devices cgroup", "error", err)
	}
}

// oomKilled says whether the memory limit got the task killed.
func (h *taskHandle) oomKilled() bool {
	return h.limiter != nil && h.limiter.OOMKilled()
}

// observeLimits handles an isolated task, whose limits the executor has
// put in its own cgroups (applying them a second time would move the task
// out of the cgroup that holds its device allow-list): the driver only
// finds that cgroup, to tell an OOM kill when the task exits. Nothing is
// removed later; the executor removes its cgroups.
func (d *Driver) observeLimits(h *taskHandle, cfg *drivers.TaskConfig) {
	if d.limitsUnsupported() != "" {
		return
	}
	lim := d.newLimiter(cfg)
	c, ok := lim.(*cgroupLimiter)
	if !ok {
		return
	}
	if err := c.observe(h.pid); err != nil {
		h.logger.Debug("cannot find the isolated task's memory cgroup; OOM kills will not be reported", "pid", h.pid, "error", err)
		return
	}
	h.limiter = observer{c}
}

// observer is a limiter that only reads the executor's cgroups.
type observer struct{ c *cgroupLimiter }

// Apply implements limiter; the executor applied the limits.
func (observer) Apply(int, limits) error { return nil }

// OOMKilled implements limiter.
func (o observer) OOMKilled() bool { return o.c.OOMKilled() }

// Remove implements limiter; the executor removes its cgroups.
func (observer) Remove() error { return nil }

// observe finds the memory cgroup pid is in (v2: its only cgroup).
func (c *cgroupLimiter) observe(pid int) error {
	paths, err := readProcCgroup(filepath.Join(c.procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(c.root, "cgroup.controllers")); err == nil {
		c.memDir = filepath.Join(c.root, paths[""])
		return nil
	}
	p, ok := paths["memory"]
	if !ok {
		return errors.New("cgroup v1: no memory hierarchy in the task's cgroups")
	}
	c.memDir = filepath.Join(c.root, "memory", p)
	return nil
}
