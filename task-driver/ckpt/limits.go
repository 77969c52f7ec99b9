package ckpt

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/plugins/drivers"
)

// MsgLimitsNotEnforced starts the event sent when a task runs without its
// resource limits enforced; the reason follows.
const MsgLimitsNotEnforced = "Resource limits not enforced: "

// Where cgroups and process information live on a real host.
const (
	defaultCgroupRoot = "/sys/fs/cgroup"
	defaultProcRoot   = "/proc"
)

// limits are the resource limits enforced on one task.
type limits struct {
	memoryBytes int64 // hard memory limit; 0 means none
	cpuShares   int64 // relative CPU weight in cgroup v1 shares; 0 means none
}

// limitsFor derives a task's limits from its resources: the hard memory
// limit is memory_max when set, memory otherwise; the CPU weight is the
// task's cpu (MHz) as shares, as Nomad's exec driver does.
func limitsFor(r *drivers.Resources) limits {
	if r == nil || r.NomadResources == nil {
		return limits{}
	}
	mem := r.NomadResources.Memory.MemoryMB
	if m := r.NomadResources.Memory.MemoryMaxMB; m > mem {
		mem = m
	}
	return limits{memoryBytes: mem * 1024 * 1024, cpuShares: r.NomadResources.Cpu.CpuShares}
}

// limiter enforces a task's limits on its process.
type limiter interface {
	// Apply puts pid under the limits; applying twice is harmless.
	Apply(pid int, l limits) error
	// OOMKilled says whether the kernel killed a process for the memory limit.
	OOMKilled() bool
	// Remove undoes what Apply created, once the task is gone.
	Remove() error
}

// cgroupLimiter enforces limits with cgroups v1 or v2 under root.
type cgroupLimiter struct {
	root     string // cgroup filesystem, /sys/fs/cgroup
	procRoot string // /proc
	name     string // the child cgroup created on v1
	mkdir    func(dir string) error

	memDir  string   // cgroup holding the memory limit, once applied
	created []string // v1 child cgroups to remove
}

func newCgroupLimiter(root, procRoot, allocID, task string) *cgroupLimiter {
	return &cgroupLimiter{
		root: root, procRoot: procRoot, name: cgroupName(allocID, task),
		mkdir: func(dir string) error { return os.Mkdir(dir, 0o755) },
	}
}

// cgroupName is the v1 child cgroup of a task, one safe path component.
func cgroupName(allocID, task string) string {
	clean := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, allocID+"-"+task)
	return "allot-ckpt-" + clean
}

// Apply implements limiter.
func (c *cgroupLimiter) Apply(pid int, l limits) error {
	if pid <= 0 {
		return fmt.Errorf("invalid pid %d", pid)
	}
	paths, err := readProcCgroup(filepath.Join(c.procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(c.root, "cgroup.controllers")); err == nil {
		return c.applyV2(paths, l)
	}
	return c.applyV1(pid, paths, l)
}

// applyV2 writes the limits into the task's own cgroup (the executor's scope).
func (c *cgroupLimiter) applyV2(paths map[string]string, l limits) error {
	p, ok := paths[""]
	if !ok || p == "/" || p == "" {
		return errors.New("cgroup v2: the task is not in a cgroup of its own")
	}
	dir := filepath.Join(c.root, p)
	if l.memoryBytes > 0 {
		if err := writeCgroup(dir, "memory.max", l.memoryBytes); err != nil {
			return err
		}
		c.memDir = dir
		if _, err := os.Stat(filepath.Join(dir, "memory.swap.max")); err == nil {
			if err := writeCgroup(dir, "memory.swap.max", 0); err != nil {
				return err
			}
		}
	}
	if l.cpuShares > 0 {
		return writeCgroup(dir, "cpu.weight", sharesToWeight(l.cpuShares))
	}
	return nil
}

// applyV1 creates the task's child cgroup beneath its current memory and
// cpu cgroups, writes the limits and moves the process in.
func (c *cgroupLimiter) applyV1(pid int, paths map[string]string, l limits) error {
	if l.memoryBytes > 0 {
		dir, err := c.childV1("memory", paths)
		if err != nil {
			return err
		}
		if err := writeCgroup(dir, "memory.limit_in_bytes", l.memoryBytes); err != nil {
			return err
		}
		// Without swap accounting the file is absent; the limit still holds.
		_ = writeCgroup(dir, "memory.memsw.limit_in_bytes", l.memoryBytes)
		if err := writeCgroup(dir, "cgroup.procs", int64(pid)); err != nil {
			return err
		}
		c.memDir = dir
	}
	if l.cpuShares > 0 {
		dir, err := c.childV1("cpu", paths)
		if err != nil {
			return err
		}
		if err := writeCgroup(dir, "cpu.shares", l.cpuShares); err != nil {
			return err
		}
		return writeCgroup(dir, "cgroup.procs", int64(pid))
	}
	return nil
}

// childV1 creates (or finds) the task's child cgroup in one v1 hierarchy.
// A process already in it (after recovery) is not nested a second time.
func (c *cgroupLimiter) childV1(controller string, paths map[string]string) (string, error) {
	p, ok := paths[controller]
	if !ok {
		return "", fmt.Errorf("cgroup v1: no %s hierarchy in the task's cgroups", controller)
	}
	base := filepath.Join(c.root, controller, p)
	dir := filepath.Join(base, c.name)
	if filepath.Base(base) == c.name {
		dir = base
	}
	if err := c.mkdir(dir); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("cgroup v1: creating %s: %w", dir, err)
	}
	c.created = append(c.created, dir)
	return dir, nil
}

// OOMKilled implements limiter: it reads the oom_kill counter of the
// cgroup holding the memory limit (memory.events on v2, memory.oom_control
// on v1).
func (c *cgroupLimiter) OOMKilled() bool {
	if c.memDir == "" {
		return false
	}
	for _, f := range []string{"memory.events", "memory.oom_control"} {
		if n, err := readCounter(filepath.Join(c.memDir, f), "oom_kill"); err == nil {
			return n > 0
		}
	}
	return false
}

// Remove implements limiter: it removes the v1 child cgroups; the ones
// that could not be removed are kept for another try. On v2 there is
// nothing of ours to remove; the executor removes its scope.
func (c *cgroupLimiter) Remove() error {
	var errs []error
	var left []string
	for _, dir := range c.created {
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dir, err))
			left = append(left, dir)
		}
	}
	c.created = left
	return errors.Join(errs...)
}

// readProcCgroup parses /proc/<pid>/cgroup into controller → path; the v2
// unified entry is keyed "". Named hierarchies (name=systemd) are skipped.
func readProcCgroup(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the task's cgroups: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("reading the task's cgroups: malformed line %q in %s", sc.Text(), path)
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			out[ctl] = parts[2]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the task's cgroups: %w", err)
	}
	return out, nil
}

// writeCgroup writes one value into a cgroup control file.
func writeCgroup(dir, file string, v int64) error {
	p := filepath.Join(dir, file)
	// No O_CREATE: a missing control file means the controller is absent.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	_, err = f.WriteString(strconv.FormatInt(v, 10))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// readCounter reads "key N" from a flat-keyed cgroup file.
func readCounter(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, key)
}

// sharesToWeight maps v1 cpu.shares [2, 262144] onto v2 cpu.weight
// [1, 10000] linearly, the conversion runc and systemd use.
func sharesToWeight(shares int64) int64 {
	switch {
	case shares < 2:
		shares = 2
	case shares > 262144:
		shares = 262144
	}
	return 1 + ((shares-2)*9999)/262142
}
