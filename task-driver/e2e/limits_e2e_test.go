//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
)

// limitsJob runs a python3 payload that touches mb MiB of memory in 8 MiB
// steps and sleeps; memory = 64. Its last argument is the job ID, so the
// test finds its host pid (inside the task's PID namespace it is 1).
func limitsJob(id string, mb int, python string) string {
	payload := fmt.Sprintf(`import os, time
held = []
for i in range(%d // 8):
    held.append(b"x" * (8 << 20))
    print("held %%d MiB" %% (8 * len(held)), flush=True)
print("ready", flush=True)
time.sleep(300)
`, mb)
	return fmt.Sprintf(`
job %q {
  type = "batch"
  reschedule {
    attempts  = 0
    unlimited = false
  }
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "train" {
      driver = "ckpt"
      config {
        command = %q
        args    = ["-c", %q, %q]
      }
      resources {
        cpu    = 120
        memory = 64
      }
    }
  }
}`, id, python, payload, id)
}

// limits is scenario limits: memory and CPU weight are enforced through
// cgroups; a task over its memory is OOM-killed, one within it runs.
func (s *suite) limits(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroup limits need the plugin to run as root")
	}
	if !hasPython() {
		t.Skipf("%s is not installed", pythonInChroot)
	}
	fits, _ := s.c.RegisterHCL("fits.nomad.hcl", limitsJob("fits", 32, pythonInChroot))
	alloc := running(s.c, *fits.ID)
	waitLog(t, s.c, alloc.ID, `ready\n`, time.Minute)
	dirs := checkCgroupLimits(t, hostPID(t, *fits.ID), 64<<20, 120)
	stopJob(t, s.c, *fits.ID)
	s.c.Eventually(30*time.Second, "the task's cgroups removed", func() error {
		for _, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				return fmt.Errorf("%s still exists", d)
			}
		}
		return nil
	})

	oom, _ := s.c.RegisterHCL("oom.nomad.hcl", limitsJob("oom", 1024, pythonInChroot))
	failed := s.c.WaitForAlloc(api.DefaultNamespace, *oom.ID, 90*time.Second,
		testcluster.ClientStatus(api.AllocClientStatusFailed))
	var term *api.TaskEvent
	for _, e := range s.c.TaskEvents(failed.ID, "train") {
		if e.Type == api.TaskTerminated {
			term = e
		}
	}
	must.NotNil(t, term, must.Sprintf("events: %s", describe(s.c.TaskEvents(failed.ID, "train"))))
	must.Eq(t, "true", term.Details["oom_killed"], must.Sprintf("terminated: %s %v", term.DisplayMessage, term.Details))
	must.Eq(t, "9", term.Details["signal"])
	out := s.c.TaskLogs(failed.ID, "train", "stdout")
	must.StrNotContains(t, out, "ready")
	must.StrContains(t, out, "held 8 MiB")
	t.Logf("oom task: %s; stdout tail %q", term.DisplayMessage, tailString(out, 40))
}

// checkCgroupLimits checks the cgroups of a running task hold its limits
// and returns the task's own cgroup dirs. Under isolation they are the
// executor's cgroups; the driver's own limiter must not have moved the
// task into a child of its own (the limits are applied once).
func checkCgroupLimits(t *testing.T, pid string, memBytes, shares int64) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
	must.NoError(t, err)
	paths := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		must.Eq(t, 3, len(parts), must.Sprintf("line %q", line))
		for _, ctl := range strings.Split(parts[1], ",") {
			paths[ctl] = parts[2]
		}
	}
	const root = "/sys/fs/cgroup"
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		dir := filepath.Join(root, paths[""])
		must.Eq(t, fmt.Sprint(memBytes), readTrim(t, filepath.Join(dir, "memory.max")))
		return nil // v2: the executor owns and removes the scope
	}
	mem := filepath.Join(root, "memory", paths["memory"])
	cpu := filepath.Join(root, "cpu", paths["cpu"])
	for _, d := range []string{mem, cpu} {
		must.StrNotContains(t, d, "allot-ckpt-", must.Sprint("limits applied twice: the driver moved an isolated task"))
	}
	must.Eq(t, fmt.Sprint(memBytes), readTrim(t, filepath.Join(mem, "memory.limit_in_bytes")))
	must.Eq(t, fmt.Sprint(shares), readTrim(t, filepath.Join(cpu, "cpu.shares")))
	return []string{mem, cpu}
}

// hostPID finds the host pid of the process whose last argument is mark.
func hostPID(t *testing.T, mark string) string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	must.NoError(t, err)
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) > 1 && args[len(args)-1] == mark {
			return filepath.Base(filepath.Dir(p))
		}
	}
	t.Fatalf("no process with last argument %q", mark)
	return ""
}

func readTrim(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must.NoError(t, err)
	return strings.TrimSpace(string(b))
}
