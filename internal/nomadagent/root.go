package nomadagent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerFile names the file in a root dir that holds the PID of the process
// that created it, so a later run can reap what a killed run left behind.
const ownerFile = "owner.pid"

// NewRoot creates a fresh directory under the system temp dir for a set of
// agents, recording this process as its owner. The name is kept short:
// unix socket paths under it must stay below 108 bytes.
func NewRoot(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", fmt.Errorf("creating agent root: %w", err)
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return "", fmt.Errorf("resolving agent root: %w", err)
	}
	pid := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(pid), 0o644); err != nil {
		return "", fmt.Errorf("writing owner file: %w", err)
	}
	return dir, nil
}

// RemoveRoot sweeps dir (see Sweep) and deletes it.
func RemoveRoot(dir string, cgroupParents ...string) error {
	_, sweepErr := Sweep(dir, cgroupParents...)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w (sweep: %v)", dir, err, sweepErr)
	}
	return sweepErr
}

// ReapStale removes the roots with the given prefix whose owner process is
// gone: what a test binary killed by a timeout could not clean up itself.
// It returns the dirs it removed.
func ReapStale(prefix string) []string {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	var reaped []string
	for _, dir := range matches {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || processAlive(pid) {
			continue
		}
		if RemoveRoot(dir, CgroupParentsIn(dir)...) == nil {
			reaped = append(reaped, dir)
		}
	}
	return reaped
}

// CgroupParentsIn lists the cgroup parents recorded by agents under dir.
func CgroupParentsIn(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*", cgroupFile))
	var parents []string
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			parents = append(parents, strings.TrimSpace(string(data)))
		}
	}
	return parents
}

// cgroupFile records an agent's cgroup parent in its dir for ReapStale.
const cgroupFile = "cgroup_parent"

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// CgroupParent returns a cgroup parent unique to id, in the form Nomad
// expects for the host's cgroup version ("/id" on v1, "id.slice" on v2).
func CgroupParent(id string) string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return id + ".slice"
	}
	return "/" + id
}
