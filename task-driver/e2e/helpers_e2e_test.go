//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
)

// trainJob renders a ckpt batch job running the toy trainer.
type trainJob struct {
	id, args          string
	ckptTimeout, kill string
	priority, cpu     int
	shell             bool // run the trainer under /bin/sh, as a child
}

func job(id string) *trainJob {
	return &trainJob{id: id, ckptTimeout: "5s", kill: "8s", priority: 50, cpu: 100}
}

func (j *trainJob) trainerArgs(a ...string) *trainJob {
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = strconv.Quote(s)
	}
	j.args = strings.Join(q, ", ")
	return j
}

func (j *trainJob) timeouts(ckpt, kill string) *trainJob {
	j.ckptTimeout, j.kill = ckpt, kill
	return j
}
func (j *trainJob) prio(p int) *trainJob   { j.priority = p; return j }
func (j *trainJob) cpuMHz(c int) *trainJob { j.cpu = c; return j }
func (j *trainJob) underShell() *trainJob  { j.shell = true; return j }

func (j *trainJob) hcl(trainer string) string {
	command, args := strconv.Quote(trainer), "["+j.args+"]"
	if j.shell {
		// No exec: the trainer is a child of sh, so only a signal to the
		// whole process group reaches it. The shell traps the signal (a
		// handler, which children do not inherit) so it outlives it.
		script := "trap 'true' USR1; " + trainer + " " + strings.ReplaceAll(strings.ReplaceAll(j.args, `"`, ""), ",", "") + "; echo shell-done"
		command, args = `"/bin/sh"`, fmt.Sprintf(`["-c", %q]`, script)
	}
	return fmt.Sprintf(`
job %q {
  type     = "batch"
  priority = %d
  group "g" {
    reschedule {
      attempts  = 0
      unlimited = false
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "train" {
      driver       = "ckpt"
      kill_timeout = %q
      config {
        command = %s
        args    = %s
        checkpoint {
          signal  = "SIGUSR1"
          timeout = %q
        }
      }
      resources {
        cpu    = %d
        memory = 32
      }
    }
  }
}`, j.id, j.priority, j.kill, command, args, j.ckptTimeout, j.cpu)
}

// running waits for a running allocation of job, other than those in skip.
func running(c *testcluster.Cluster, jobID string, skip ...string) *api.AllocationListStub {
	return c.WaitForAlloc(api.DefaultNamespace, jobID, 90*time.Second, func(a *api.AllocationListStub) error {
		for _, s := range skip {
			if a.ID == s {
				return errors.New("an old allocation")
			}
		}
		return testcluster.ClientStatus(api.AllocClientStatusRunning)(a)
	})
}

// waitEvent waits until the task has an event whose message matches re.
func waitEvent(t *testing.T, c *testcluster.Cluster, allocID, re string, timeout time.Duration) *api.TaskEvent {
	t.Helper()
	rx := regexp.MustCompile(re)
	var found *api.TaskEvent
	c.Eventually(timeout, fmt.Sprintf("event %q on %s", re, allocID[:8]), func() error {
		events := c.TaskEvents(allocID, "train")
		for _, e := range events {
			if rx.MatchString(e.DisplayMessage) {
				found = e
				return nil
			}
		}
		return fmt.Errorf("events so far: %s", describe(events))
	})
	return found
}

func describe(events []*api.TaskEvent) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "[%s: %s] ", e.Type, e.DisplayMessage)
	}
	return b.String()
}

// waitLog waits until the task's stdout matches re and returns the match.
func waitLog(t *testing.T, c *testcluster.Cluster, allocID, re string, timeout time.Duration) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	var m []string
	c.Eventually(timeout, fmt.Sprintf("stdout %q of %s", re, allocID[:8]), func() error {
		out := c.TaskLogs(allocID, "train", "stdout")
		if m = rx.FindStringSubmatch(out); m == nil {
			return fmt.Errorf("stdout so far: %q", tailString(out, 300))
		}
		return nil
	})
	return m
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// stopJob deregisters a job and waits until its allocations are done.
func stopJob(t *testing.T, c *testcluster.Cluster, jobID string) {
	t.Helper()
	_, _, err := c.API.Jobs().Deregister(jobID, false, nil)
	must.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = testcluster.Poll(ctx, 200*time.Millisecond, func() error {
		allocs, _, err := c.API.Allocations().List(&api.QueryOptions{Filter: fmt.Sprintf("JobID == %q", jobID)})
		if err != nil {
			return err
		}
		for _, a := range allocs {
			if a.ClientStatus == api.AllocClientStatusRunning || a.ClientStatus == api.AllocClientStatusPending {
				return fmt.Errorf("alloc %s still %s", a.ID[:8], a.ClientStatus)
			}
		}
		return nil
	})
	must.NoError(t, err)
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	must.NoError(t, err)
	return n
}
