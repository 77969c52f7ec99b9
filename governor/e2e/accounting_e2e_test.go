//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
)

// runSleep submits a job of team-a that sleeps secs seconds on gpus GPUs with the real nomad CLI through the
// governor and returns its output and error.
// waitAllocsDone waits until every allocation of ns/id is terminal: only
// then has Nomad freed what they held.
func (e *env) waitAllocsDone(ns, id string) {
	e.t.Helper()
	e.c.Eventually(time.Minute, ns+"/"+id+"'s allocations terminal", func() error {
		for _, a := range e.jobAllocs(ns, id) {
			if a.ClientStatus == api.AllocClientStatusPending || a.ClientStatus == api.AllocClientStatusRunning {
				return fmt.Errorf("allocation %s is %s", a.ID[:8], a.ClientStatus)
			}
		}
		return nil
	})
}

func (e *env) runSleep(id, secs string, gpus int) (string, error) {
	e.t.Helper()
	p := jobSpec{ID: id, Namespace: "team-a", Secs: secs, GPUs: gpus}.write(e.t, e.dir)
	cmd := exec.Command(e.nomad, "job", "run", "-detach", p)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+e.g.Addr, "NOMAD_NAMESPACE=", "NOMAD_TOKEN=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runCLI runs the nomad CLI against addr.
func (e *env) runCLI(addr string, args ...string) (string, error) {
	cmd := exec.Command(e.nomad, args...)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+addr, "NOMAD_NAMESPACE=", "NOMAD_TOKEN=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// gpuUsage is team-a's GPU usage as the governor at gov reports it.
func gpuUsage(gov *allotapi.Client) (int64, error) {
	ts, err := gov.Tenants(context.Background())
	if err != nil {
		return 0, err
	}
	for _, tn := range ts.Tenants {
		if tn.Namespace == "team-a" {
			return tn.Usage["gpu"], nil
		}
	}
	return 0, fmt.Errorf("no tenant team-a")
}

// gpusRunning counts the GPUs of job ns/id's running allocations.
func (e *env) gpusRunning(ns, id string) int {
	allocs, _, err := e.c.API.Jobs().Allocations(id, false, &api.QueryOptions{Namespace: ns})
	must.NoError(e.t, err)
	n := 0
	for _, stub := range allocs {
		if stub.ClientStatus != api.AllocClientStatusRunning || stub.DesiredStatus != api.AllocDesiredStatusRun {
			continue
		}
		a, _, err := e.c.API.Allocations().Info(stub.ID, &api.QueryOptions{Namespace: ns})
		must.NoError(e.t, err)
		for _, t := range a.AllocatedResources.Tasks {
			for _, d := range t.Devices {
				n += len(d.DeviceIDs)
			}
		}
	}
	return n
}

// TestE2E_Accounting: what the engine weighs on a real Nomad 1.6.1 with
// the real CLI through the governor (team-a: limit 4 GPUs).
func TestE2E_Accounting(t *testing.T) {
	e := newEnv(t)

	t.Run("audit #7: a finished batch job's first run is over", func(t *testing.T) {
		out, err := e.runSleep("done", "1", 2)
		must.NoError(t, err, must.Sprint(out))
		must.StrContains(t, out, "admitted")
		e.c.WaitForJobStatus("team-a", "done", "dead", time.Minute)
	})

	t.Run("audit #12: a growing update beyond the limit is refused, the running version keeps running", func(t *testing.T) {
		out, err := e.runSleep("grow", "600", 2)
		must.NoError(t, err, must.Sprint(out))
		e.waitRunning("team-a", "grow", time.Minute)
		out, err = e.runSleep("grow", "600", 6)
		must.Error(t, err)
		must.StrContains(t, out, "not admitted now")
		must.StrContains(t, out, "limit: needs 6 gpu; tenant team-a uses 0 of limit 4")
		j := e.job("team-a", "grow")
		must.False(t, *j.Stop, must.Sprint("the refused update did not stop the running version"))
		must.Eq(t, 2, e.gpusRunning("team-a", "grow"))
	})

	t.Run("audit #12: growing 1x2 to 1x4 GPUs is admitted against what it replaces", func(t *testing.T) {
		out, err := e.runSleep("grow", "601", 4)
		must.NoError(t, err, must.Sprint(out))
		must.StrContains(t, out, "admitted")
		e.c.Eventually(time.Minute, "grow runs 4 GPUs", func() error {
			if n := e.gpusRunning("team-a", "grow"); n != 4 {
				return fmt.Errorf("grow runs %d GPUs", n)
			}
			return nil
		})
	})

	t.Run("audit #7: re-running the finished job is weighed in full", func(t *testing.T) {
		out, err := e.runSleep("done", "2", 3)
		must.NoError(t, err, must.Sprint(out))
		must.StrContains(t, out, "is QUEUED")
		must.StrContains(t, out, "limit: needs 3 gpu; tenant team-a uses 4 of limit 4")
		must.True(t, held(e.job("team-a", "done")))
	})

	t.Run("audit #21: a held job stopped while the governor is down stays stopped", func(t *testing.T) {
		e.g.Kill()
		e.stop("team-a", "done")
		e.stop("team-a", "grow") // capacity for "done", were it restarted
		e.g.Start()
		// Nomad frees grow's GPUs when its allocations are terminal, not
		// when the stop is registered (the governor counts them until then).
		e.waitAllocsDone("team-a", "grow")
		e.c.Eventually(time.Minute, "done out of the queue, not restarted", func() error {
			j := e.job("team-a", "done")
			if _, queued := j.Meta["allot.state"]; queued || !*j.Stop {
				return fmt.Errorf("done: stop=%v meta=%v", *j.Stop, j.Meta)
			}
			return nil
		})
		out, err := e.runSleep("probe", "600", 4)
		must.NoError(t, err, must.Sprint(out))
		must.StrContains(t, out, "admitted", must.Sprint("the capacity was free all along"))
		must.True(t, *e.job("team-a", "done").Stop)
		e.stop("team-a", "probe")
		e.waitAllocsDone("team-a", "probe")
	})

	t.Run("audit #4: system jobs governed per eligible node (system_jobs = govern)", func(t *testing.T) {
		e.g.Kill()
		cfg := filepath.Join(e.dir, "govern.hcl")
		must.NoError(t, os.WriteFile(cfg, []byte("cycle_interval = \"1s\"\nsystem_jobs = \"govern\"\n"), 0o644))
		g := e.c.StartGovernor("-config", cfg)
		gov := &allotapi.Client{Address: g.Addr}
		// A system job of team-a asking gpus GPUs per node.
		write := func(id string, prio, gpus int) string {
			return jobSpec{ID: id, Namespace: "team-a", Type: "system", Priority: prio, GPUs: gpus}.write(t, e.dir)
		}
		// 1 GPU on each of the two GPU nodes: 2 of team-a's 4.
		out, err := e.runCLI(g.Addr, "job", "run", "-detach", write("sys1", 50, 1))
		must.NoError(t, err, must.Sprint(out))
		must.StrContains(t, out, "admitted")
		e.c.Eventually(time.Minute, "sys1 on both nodes, counted once per node", func() error {
			if n := e.gpusRunning("team-a", "sys1"); n != 2 {
				return fmt.Errorf("sys1 runs %d GPUs", n)
			}
			if u, err := gpuUsage(gov); err != nil || u != 2 {
				return fmt.Errorf("team-a uses %d GPUs (%v)", u, err)
			}
			return nil
		})
		// 2 GPUs on each node: 4 more.
		out, err = e.runCLI(g.Addr, "job", "run", "-detach", write("sys2", 50, 2))
		must.NoError(t, err, must.Sprint(out))
		must.StrContains(t, out, "is QUEUED")
		must.StrContains(t, out, "limit: needs 4 gpu; tenant team-a uses 2 of limit 4")
		// Straight to Nomad at priority 100, within the limit: held all the same.
		out, err = e.runCLI(e.c.Addr(), "job", "run", "-detach", write("sys3", 100, 1))
		must.NoError(t, err, must.Sprint(out))
		e.c.Eventually(30*time.Second, "sys3 held", func() error {
			j := e.job("team-a", "sys3")
			if !*j.Stop {
				return fmt.Errorf("sys3 runs at priority %d", *j.Priority)
			}
			return nil
		})
		w, err := gov.Why(context.Background(), "team-a", "sys3")
		must.NoError(t, err)
		must.StrContains(t, w.Reason, "priority")
	})
}
