//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
)

// tenancySuite is the cluster of the checkpoint-tenancy scenarios: one
// client whose ckpt driver runs tasks unisolated (isolation = "none", the
// case where only file permissions keep tenants apart), tenant-a's tasks
// as daemon and tenant-b's as bin.
type tenancySuite struct {
	c    *testcluster.Cluster
	root string
}

// TestE2E_CheckpointTenancy runs the checkpoint side of audit #14 and
// audit #28 on a real cluster: tenants cannot reach each other's
// checkpoints, a planted symlink is not followed, and a client restart
// does not touch a process that got a dead task's pid.
func TestE2E_CheckpointTenancy(t *testing.T) {
	s := &tenancySuite{root: t.TempDir()}
	openToAll(t, s.root)
	must.NoError(t, os.Chmod(s.root, 0o711))
	driverCfg := fmt.Sprintf(`checkpoint_root = %q
isolation = "none"
poll_interval = "100ms"
namespace_users {
  "tenant-a" = ["daemon"]
  "tenant-b" = ["bin"]
}`, s.root)
	s.c = testcluster.New(t, testcluster.Options{
		Plugins: []string{"nomad-driver-ckpt"},
		Clients: []testcluster.ClientSpec{{
			Name:         "tenancy-1",
			PluginConfig: map[string]string{"nomad-driver-ckpt": driverCfg},
		}},
	})
	// Unisolated tasks run as daemon and bin in their task dirs, under
	// the client's data dir.
	traversable(t, s.c.Client("tenancy-1").Config().DataDir)
	for _, ns := range []string{"tenant-a", "tenant-b"} {
		_, err := s.c.API.Namespaces().Register(&api.Namespace{Name: ns}, nil)
		must.NoError(t, err)
	}
	t.Run("audit #14: tenant A's task can neither list nor read tenant B's checkpoint tree", s.apart)
	t.Run("audit #14: a symlink tenant A plants in its tree makes the driver create or chown nothing outside", s.plantedSymlink)
	t.Run("audit #28: a client restart with the task's pid recycled leaves that process alone", s.recycledPid)
}

// tenantJob is a ckpt batch job in ns running command with args, as user,
// with one task "train" in each of groups; restarts and reschedules off.
func tenantJob(id, ns, user, command string, args []string, groups ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "job %q {\n  namespace = %q\n  type = \"batch\"\n  reschedule {\n    attempts  = 0\n    unlimited = false\n  }\n", id, ns)
	for _, g := range groups {
		fmt.Fprintf(&b, `  group %q {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "train" {
      driver = "ckpt"
      user   = %q
      config {
        command = %q
        args    = [%s]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
`, g, user, command, strings.Join(q, ", "))
	}
	b.WriteString("}\n")
	return b.String()
}

// runningIn waits for a running allocation of job in ns, in group when set;
// a failed one fails the test at once, with its events.
func (s *tenancySuite) runningIn(t *testing.T, ns, jobID, group string) *api.AllocationListStub {
	t.Helper()
	a := s.c.WaitForAlloc(ns, jobID, 90*time.Second, func(a *api.AllocationListStub) error {
		if group != "" && a.TaskGroup != group {
			return fmt.Errorf("group %s", a.TaskGroup)
		}
		if a.ClientStatus == api.AllocClientStatusFailed {
			return nil
		}
		return testcluster.ClientStatus(api.AllocClientStatusRunning)(a)
	})
	if a.ClientStatus == api.AllocClientStatusFailed {
		t.Fatalf("allocation %s of %s/%s failed: %s", a.ID[:8], ns, jobID, describe(s.c.TaskEvents(a.ID, "train")))
	}
	return a
}

func (s *tenancySuite) stop(t *testing.T, ns, jobID string) {
	t.Helper()
	_, _, err := s.c.API.Jobs().Deregister(jobID, true, &api.WriteOptions{Namespace: ns})
	must.NoError(t, err)
}

// apart: tenant B's task saves a checkpoint; tenant A's task tries to list
// and read it, and reports each attempt.
func (s *tenancySuite) apart(t *testing.T) {
	bDir := filepath.Join(s.root, "tenant-b", "secret", "train", "0", "train")
	save := `d="$ALLOT_CHECKPOINT_DIR"; echo weights > "$d/ck-1"; printf '%s\n1\n' "$d/ck-1" > "$d/LATEST.tmp"; mv "$d/LATEST.tmp" "$d/LATEST"; echo saved; exec sleep 300`
	s.c.RegisterHCL("secret.nomad.hcl", tenantJob("secret", "tenant-b", "bin", "/bin/sh", []string{"-c", save}, "train"))
	b := s.runningIn(t, "tenant-b", "secret", "")
	s.c.Eventually(time.Minute, "tenant B's checkpoint", func() error {
		if !strings.Contains(s.c.TaskLogs(b.ID, "train", "stdout"), "saved\n") {
			return errors.New("not saved yet")
		}
		return nil
	})
	// The targets exist: a denial below is the permissions, not a typo.
	for _, p := range []string{filepath.Join(bDir, "LATEST"), filepath.Join(bDir, "ck-1")} {
		_, err := os.Stat(p)
		must.NoError(t, err)
	}
	must.Eq(t, os.FileMode(0o711), mode(t, filepath.Join(s.root, "tenant-b")))
	must.Eq(t, 0, owner(t, filepath.Join(s.root, "tenant-b")))
	must.Eq(t, os.FileMode(0o700), mode(t, filepath.Join(s.root, "tenant-b", "secret")))

	var probe strings.Builder
	probe.WriteString(`try() { if "$@" >/dev/null 2>&1; then echo "LEAK: $*"; else echo "DENIED: $*"; fi; }; `)
	for _, cmd := range []string{
		"ls " + s.root,
		"ls " + filepath.Join(s.root, "tenant-b"),
		"ls " + filepath.Join(s.root, "tenant-b", "secret"),
		"ls " + bDir,
		"cat " + filepath.Join(bDir, "LATEST"),
		"cat " + filepath.Join(bDir, "ck-1"),
		"touch " + filepath.Join(s.root, "tenant-b", "planted"),
	} {
		fmt.Fprintf(&probe, "try %s; ", cmd)
	}
	probe.WriteString(`echo mine > "$ALLOT_CHECKPOINT_DIR/own" && cat "$ALLOT_CHECKPOINT_DIR/own" && echo "uid=$(id -u)"; echo probe-done`)
	s.c.RegisterHCL("probe.nomad.hcl", tenantJob("probe", "tenant-a", "daemon", "/bin/sh", []string{"-c", probe.String()}, "train"))
	a := s.c.WaitForAlloc("tenant-a", "probe", 90*time.Second, testcluster.ClientStatus(api.AllocClientStatusComplete))
	out := s.c.TaskLogs(a.ID, "train", "stdout")
	must.StrContains(t, out, "probe-done")
	must.StrContains(t, out, "mine\nuid=1\n", must.Sprint("the probe can use its own checkpoint dir, as daemon"))
	must.Eq(t, 7, strings.Count(out, "DENIED: "), must.Sprintf("probe output:\n%s", out))
	must.StrNotContains(t, out, "LEAK")
	s.stop(t, "tenant-b", "secret")
	s.stop(t, "tenant-a", "probe")
}

// plantedSymlink: tenant A's task replaces a directory the driver will
// create later with a symlink to a root-owned directory outside the tree;
// the next task that would use it fails to start, and the target is left
// exactly as it was.
func (s *tenancySuite) plantedSymlink(t *testing.T) {
	target := filepath.Join(t.TempDir(), "etc-like")
	must.NoError(t, os.Mkdir(target, 0o755))
	before := snapshot(t, target)
	// $ALLOT_CHECKPOINT_DIR is <root>/tenant-a/plant/g/0/train; ../../.. is
	// the job's directory, which the tenant owns.
	plant := fmt.Sprintf(`ln -s %s "$ALLOT_CHECKPOINT_DIR/../../../g2" && echo planted; exec sleep 300`, target)
	s.c.RegisterHCL("plant.nomad.hcl", tenantJob("plant", "tenant-a", "daemon", "/bin/sh", []string{"-c", plant}, "g"))
	first := s.runningIn(t, "tenant-a", "plant", "g")
	s.c.Eventually(time.Minute, "the planted symlink", func() error {
		if !strings.Contains(s.c.TaskLogs(first.ID, "train", "stdout"), "planted") {
			return errors.New("not planted yet")
		}
		return nil
	})
	link := filepath.Join(s.root, "tenant-a", "plant", "g2")
	fi, err := os.Lstat(link)
	must.NoError(t, err)
	must.Eq(t, os.ModeSymlink, fi.Mode().Type())

	// Group g is unchanged (its allocation keeps running); g2 is new and
	// its checkpoint dir would be <job>/g2/0/train, through the symlink.
	s.c.RegisterHCL("plant.nomad.hcl", tenantJob("plant", "tenant-a", "daemon", "/bin/sh", []string{"-c", plant}, "g", "g2"))
	failed := s.c.WaitForAlloc("tenant-a", "plant", 90*time.Second, func(a *api.AllocationListStub) error {
		if a.TaskGroup != "g2" {
			return fmt.Errorf("group %s", a.TaskGroup)
		}
		return testcluster.ClientStatus(api.AllocClientStatusFailed)(a)
	})
	events := s.c.TaskEvents(failed.ID, "train")
	must.StrContains(t, describe(events), "is a symlink or not a directory: refusing to follow it")
	must.StrContains(t, describe(events), link)
	must.Eq(t, before, snapshot(t, target), must.Sprint("the symlink's target was changed"))
	fi, err = os.Lstat(link)
	must.NoError(t, err)
	must.Eq(t, os.ModeSymlink, fi.Mode().Type())
	s.stop(t, "tenant-a", "plant")
}

// recycledPid: while the client is down the task dies and an unrelated
// process gets its pid; after the restart the driver must neither move
// that process into the task's cgroups nor signal it, and the task is
// reported as exited.
func (s *tenancySuite) recycledPid(t *testing.T) {
	const marker = "3017"
	s.c.RegisterHCL("survivor.nomad.hcl", tenantJob("survivor", "tenant-a", "daemon", "/bin/sleep", []string{marker}, "train"))
	alloc := s.runningIn(t, "tenant-a", "survivor", "")
	pid := findProc(t, "/bin/sleep\x00"+marker+"\x00")
	cl := s.c.Client("tenancy-1")
	s.c.StopClient(cl)
	// The executor survives the client; it reaps the task it launched.
	must.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	s.c.Eventually(10*time.Second, fmt.Sprintf("pid %d to be reaped", pid), func() error {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			return errors.New("still there")
		}
		return nil
	})
	other := recyclePid(t, pid)
	s.c.StartClient(cl)

	ev := waitEvent(t, s.c, alloc.ID, `^Recovered task pid not verified: `, time.Minute)
	must.StrContains(t, ev.DisplayMessage, fmt.Sprintf("pid %d started at tick", pid))
	s.c.WaitForAlloc("tenant-a", "survivor", time.Minute, testcluster.ClientStatus(api.AllocClientStatusFailed))
	other.untouched(t)
	// Destroying the task (the client's alloc GC) must not shut the
	// executor down onto the pid either: without cgroups that SIGKILLs
	// the pid's process group.
	full, _, err := s.c.API.Allocations().Info(alloc.ID, nil)
	must.NoError(t, err)
	// Nomad answers an empty body, which api v1.6's GC decodes as JSON
	// (io.EOF); the alloc dir disappearing below is what shows it worked.
	if err := s.c.API.Allocations().GC(full, nil); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("garbage-collecting %s: %v", alloc.ID, err)
	}
	allocDir := filepath.Join(s.c.Client("tenancy-1").Config().DataDir, "alloc", alloc.ID)
	s.c.Eventually(time.Minute, "the client to destroy the allocation", func() error {
		if _, err := os.Stat(allocDir); err == nil {
			return fmt.Errorf("%s still exists", allocDir)
		}
		return nil
	})
	other.untouched(t)
	s.stop(t, "tenant-a", "survivor")
}

// findProc returns the pid of the one process whose command line is cmdline
// (NUL-separated).
func findProc(t *testing.T, cmdline string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	must.NoError(t, err)
	found := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && string(b) == cmdline {
			must.Eq(t, 0, found, must.Sprintf("two processes run %q", cmdline))
			found = pid
		}
	}
	must.Positive(t, found, must.Sprintf("no process runs %q", cmdline))
	return found
}

// stranger is a process that is not the task.
type stranger struct {
	pid    int
	start  string // field 22 of /proc/<pid>/stat
	cgroup string
}

// recyclePid starts a sleep, leading its own session, under the freed pid:
// a single-threaded shell sets ns_last_pid to pid-1 and forks. Other
// processes of this busy machine may take the pid first, so it retries.
func recyclePid(t *testing.T, pid int) *stranger {
	t.Helper()
	script := fmt.Sprintf("echo %d > /proc/sys/kernel/ns_last_pid; setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!", pid-1)
	for attempt := 0; attempt < 200; attempt++ {
		out, err := exec.Command("/bin/sh", "-c", script).Output()
		must.NoError(t, err)
		got, err := strconv.Atoi(strings.TrimSpace(string(out)))
		must.NoError(t, err)
		if got != pid {
			_ = syscall.Kill(got, syscall.SIGKILL)
			continue
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		st := &stranger{pid: pid, start: startTicks(t, pid)}
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		must.NoError(t, err)
		st.cgroup = string(cg)
		return st
	}
	t.Fatalf("could not start a process under the freed pid %d", pid)
	return nil
}

// untouched asserts the stranger is the same live process (not killed, not
// replaced) in the cgroups it started in.
func (s *stranger) untouched(t *testing.T) {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	must.NoError(t, err, must.Sprint("the stranger is gone"))
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	must.NotEq(t, "Z", fields[0], must.Sprint("the stranger was killed"))
	must.Eq(t, s.start, fields[19], must.Sprint("another process holds the pid"))
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", s.pid))
	must.NoError(t, err)
	must.Eq(t, s.cgroup, string(cg), must.Sprint("the stranger was moved into other cgroups"))
}

func startTicks(t *testing.T, pid int) string {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must.NoError(t, err)
	return strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))[19]
}

// fileSnap is what must not change about a path.
type fileSnap struct {
	uid, gid int
	mode     os.FileMode
	entries  int
}

func snapshot(t *testing.T, path string) fileSnap {
	t.Helper()
	fi, err := os.Lstat(path)
	must.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	ents, err := os.ReadDir(path)
	must.NoError(t, err)
	return fileSnap{uid: int(st.Uid), gid: int(st.Gid), mode: fi.Mode(), entries: len(ents)}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	must.NoError(t, err)
	return fi.Mode().Perm()
}

func owner(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Lstat(path)
	must.NoError(t, err)
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

// traversable makes dir and its parents up to the system temp dir
// traversable but not listable (0711).
func traversable(t *testing.T, dir string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	for d := filepath.Clean(dir); d != tmp && d != "/" && d != "."; d = filepath.Dir(d) {
		must.NoError(t, os.Chmod(d, 0o711))
	}
}
