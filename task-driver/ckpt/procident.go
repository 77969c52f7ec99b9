package ckpt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procIdentity tells one process apart from a later one that got the same
// pid: the kernel's start time of the process (clock ticks since boot,
// field 22 of /proc/<pid>/stat) on one boot (boot_id).
type procIdentity struct {
	StartTicks uint64
	BootID     string
}

// known says whether an identity was recorded.
func (p procIdentity) known() bool { return p.StartTicks != 0 && p.BootID != "" }

// ErrPidUnverified is returned when a pid cannot be shown to be the task's
// process: it names another process, none at all, or no identity was
// recorded for it.
var ErrPidUnverified = errors.New("the pid is not verified to be the task's")

// readProcIdentity reads the identity of pid from the /proc at procRoot.
// A missing process is fs.ErrNotExist (wrapped).
func readProcIdentity(procRoot string, pid int) (procIdentity, error) {
	if pid <= 0 {
		return procIdentity{}, fmt.Errorf("invalid pid %d", pid)
	}
	boot, err := os.ReadFile(filepath.Join(procRoot, "sys", "kernel", "random", "boot_id"))
	if err != nil {
		return procIdentity{}, fmt.Errorf("reading the boot id: %w", err)
	}
	stat, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procIdentity{}, fmt.Errorf("reading the start time of pid %d: %w", pid, err)
	}
	ticks, err := parseStartTicks(string(stat))
	if err != nil {
		return procIdentity{}, fmt.Errorf("reading the start time of pid %d: %w", pid, err)
	}
	return procIdentity{StartTicks: ticks, BootID: strings.TrimSpace(string(boot))}, nil
}

// parseStartTicks returns field 22 (starttime) of a /proc/<pid>/stat line.
// Field 2 is the command in parentheses and may itself hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseStartTicks(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed stat: no command field")
	}
	fields := strings.Fields(stat[i+1:])
	const startTime = 22 - 3 // fields after ')' start with field 3 (state)
	if len(fields) <= startTime {
		return 0, fmt.Errorf("malformed stat: %d fields after the command", len(fields))
	}
	ticks, err := strconv.ParseUint(fields[startTime], 10, 64)
	if err != nil || ticks == 0 {
		return 0, fmt.Errorf("malformed stat: start time %q", fields[startTime])
	}
	return ticks, nil
}

// pidGuard answers, before the driver touches a task's pid (moves it into
// cgroups, signals its process group), whether that pid is still the task.
type pidGuard struct {
	procRoot string
	pid      int
	want     procIdentity // zero when unknown: the pid is never trusted
}

// check returns nil when the pid is still the recorded process, and an
// error wrapping ErrPidUnverified when it is another process or none; an
// unknown identity is never trusted.
func (g pidGuard) check() error {
	if !g.want.known() {
		return fmt.Errorf("%w: no start time was recorded for pid %d", ErrPidUnverified, g.pid)
	}
	got, err := readProcIdentity(g.procRoot, g.pid)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: pid %d has exited", ErrPidUnverified, g.pid)
	case err != nil:
		return fmt.Errorf("%w: %v", ErrPidUnverified, err)
	case got != g.want:
		return fmt.Errorf("%w: pid %d started at tick %d of boot %s, the task at tick %d of boot %s",
			ErrPidUnverified, g.pid, got.StartTicks, got.BootID, g.want.StartTicks, g.want.BootID)
	}
	return nil
}

// occupied says whether some process holds the pid now.
func (g pidGuard) occupied() bool {
	_, err := os.Stat(filepath.Join(g.procRoot, strconv.Itoa(g.pid)))
	return err == nil
}
