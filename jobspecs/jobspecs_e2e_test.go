//go:build e2e

package jobspecs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/contract/ckptevent"
	"github.com/allot-sh/allot/internal/testcluster"
)

// TestE2EJobspecs runs the catalog on one cluster of two dev nodes (each
// 8×H200 on NVSwitch + 8×Ascend910B from the dev inventory, ckpt driver and
// raw_exec) with toy payloads: the Go toy trainer for ckpt jobs, /bin/sh for
// batch work and Python's http.server for the services.
func TestE2EJobspecs(t *testing.T) {
	trainer, python := testcluster.BuildToyTrainer(t, t.TempDir()), realPython(t)
	c := devCluster(t)

	t.Run("every jobspec validates on the server", func(t *testing.T) {
		for file := range catalog {
			job := parseFile(t, file)
			resp, _, err := c.API.Jobs().Validate(job, nil)
			must.NoError(t, err, must.Sprintf("%s", file))
			must.Eq(t, "", resp.Error, must.Sprintf("%s: %v", file, resp.ValidationErrors))
		}
	})

	small := []string{"cpu=100", "memory=64"}
	sh := func(script string) []string {
		// $${ keeps ${VAR} literal in a -var value for Nomad to interpolate.
		return []string{"command=/bin/sh", fmt.Sprintf(`args=["-c", %q]`, strings.ReplaceAll(script, "${", "$${"))}
	}
	vars := func(lists ...[]string) []string {
		var out []string
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}

	// The gang job goes first: it needs 4 GPUs on each node.
	t.Run("train-multinode: 2 workers x 4 NVSwitch GPUs on distinct hosts", func(t *testing.T) {
		job := register(t, c, "train-multinode.nomad.hcl", vars(small, []string{"nodes=2", "gpus_per_node=4"},
			sh("echo rank=$NODE_RANK of $NNODES master=$MASTER_ADDR:$MASTER_PORT; exec "+trainer+" -save-every 50 -step-time 10ms"))...)
		allocs := waitRunning(t, c, *job.ID, 2)
		must.NotEq(t, allocs[0].NodeID, allocs[1].NodeID)
		for _, a := range allocs {
			must.Eq(t, 4, gpusOf(t, c, a.ID, "nvidia/gpu"))
		}
		c.Eventually(time.Minute, "rank 1 to see rank 0's rendezvous address", func() error {
			for _, a := range allocs {
				logs := c.TaskLogs(a.ID, "train", "stdout")
				if strings.Contains(logs, "rank=1 of 2 master=127.0.0.1:") {
					return nil
				}
			}
			return fmt.Errorf("no worker logged rank=1 with a master address yet")
		})
	})

	t.Run("train-gpu: one GPU, checkpoint on stop", func(t *testing.T) {
		job := register(t, c, "train-gpu.nomad.hcl", vars(small, []string{"command=" + trainer,
			`args=["-save-every","1000","-step-time","10ms"]`, "checkpoint_timeout=5s", "kill_timeout=8s"})...)
		alloc := waitRunning(t, c, *job.ID, 1)[0]
		must.Eq(t, 1, gpusOf(t, c, alloc.ID, "nvidia/gpu"))
		// A stop before the trainer subscribes to its checkpoint signal
		// finds nothing to save; its start line says it has.
		c.Eventually(time.Minute, "the trainer's start line", func() error {
			if !strings.Contains(c.TaskLogs(alloc.ID, "train", "stdout"), "toytrainer: starting at step") {
				return fmt.Errorf("no start line in the task's stdout yet")
			}
			return nil
		})
		_, _, err := c.API.Jobs().Deregister(*job.ID, false, nil)
		must.NoError(t, err)
		c.Eventually(time.Minute, "a Checkpoint saved event after the stop", func() error {
			for _, ev := range c.TaskEvents(alloc.ID, "train") {
				if cp, ok := ckptevent.Parse(ev.DisplayMessage, ev.Details); ok && cp.Trigger != ckptevent.TriggerResume {
					return nil
				}
			}
			return fmt.Errorf("no Checkpoint saved event")
		})
	})

	t.Run("train-ascend: 8 Ascend NPUs", func(t *testing.T) {
		job := register(t, c, "train-ascend.nomad.hcl", vars(small, []string{"command=" + trainer, `args=["-step-time","10ms"]`})...)
		alloc := waitRunning(t, c, *job.ID, 1)[0]
		must.Eq(t, 8, gpusOf(t, c, alloc.ID, "huawei/npu"))
	})

	httpServer := []string{"command=" + python, `args=["-m", "http.server", "--bind", "$${NOMAD_IP_http}", "$${NOMAD_PORT_http}"]`}
	t.Run("inference: two healthy replicas on two hosts", func(t *testing.T) {
		job := register(t, c, "inference.nomad.hcl", vars(small, httpServer, []string{"health_path=/"})...)
		allocs := waitRunning(t, c, *job.ID, 2)
		must.NotEq(t, allocs[0].NodeID, allocs[1].NodeID)
		c.Eventually(2*time.Minute, "the deployment to succeed", func() error {
			deps, _, err := c.API.Jobs().Deployments(*job.ID, false, nil)
			if err != nil || len(deps) == 0 {
				return fmt.Errorf("no deployment yet: %v", err)
			}
			if deps[0].Status != api.DeploymentStatusSuccessful {
				return fmt.Errorf("deployment %s: %s", deps[0].Status, deps[0].StatusDescription)
			}
			return nil
		})
	})

	t.Run("notebook: one GPU behind a Nomad service", func(t *testing.T) {
		job := register(t, c, "notebook.nomad.hcl", vars(small, httpServer, []string{"owner=e2e"})...)
		alloc := waitRunning(t, c, *job.ID, 1)[0]
		must.Eq(t, 1, gpusOf(t, c, alloc.ID, "nvidia/gpu"))
		c.Eventually(time.Minute, "service notebook-e2e to be registered", func() error {
			regs, _, err := c.API.Services().Get("notebook-e2e", nil)
			if err != nil || len(regs) == 0 {
				return fmt.Errorf("not registered: %v", err)
			}
			return nil
		})
	})

	for name, tc := range map[string]struct{ file, countVar, want string }{
		"batch-eval: every shard completes on its GPU": {file: "batch-eval.nomad.hcl", countVar: "shards=2",
			want: "shard 1 of 2 on GPU-"},
		"preprocess-cpu: every part completes": {file: "preprocess-cpu.nomad.hcl", countVar: "parts=2",
			want: "part 1 of 2 gpus="},
	} {
		t.Run(name, func(t *testing.T) {
			script := `echo shard $SHARD of $SHARDS on $NVIDIA_VISIBLE_DEVICES`
			if strings.HasPrefix(tc.file, "preprocess") {
				script = `echo part $PART of $PARTS gpus=$NVIDIA_VISIBLE_DEVICES`
			}
			job := register(t, c, tc.file, vars(small, []string{tc.countVar}, sh(script))...)
			c.WaitForJobStatus("default", *job.ID, "dead", 2*time.Minute)
			allocs, _, err := c.API.Jobs().Allocations(*job.ID, false, nil)
			must.NoError(t, err)
			must.SliceLen(t, 2, allocs)
			var logs string
			for _, a := range allocs {
				must.Eq(t, "complete", a.ClientStatus)
				logs += c.TaskLogs(a.ID, job.TaskGroups[0].Tasks[0].Name, "stdout")
			}
			must.StrContains(t, logs, tc.want)
			if strings.HasPrefix(tc.file, "preprocess") {
				must.StrContains(t, logs, "gpus=\n", must.Sprint("a CPU-only job must see no GPU"))
			}
		})
	}
}

// register parses a catalog file with vars and registers it, failing the
// calling (sub)test on error.
func register(t *testing.T, c *testcluster.Cluster, file string, vars ...string) *api.Job {
	t.Helper()
	job := parseFile(t, file, vars...)
	_, _, err := c.API.Jobs().Register(job, nil)
	must.NoError(t, err, must.Sprintf("registering %s", file))
	return job
}

// devCluster starts two dev nodes with the dev inventory.
func devCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	root, err := testcluster.RepoRoot()
	must.NoError(t, err)
	inv := filepath.Join(root, "device-plugin", "inventory", "examples", "dev-node.hcl")
	ckpt := t.TempDir()
	node := func(name string) testcluster.ClientSpec {
		return testcluster.ClientSpec{Name: name, PluginConfig: map[string]string{
			"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv),
			"nomad-driver-ckpt":  fmt.Sprintf("checkpoint_root = %q\npoll_interval = \"100ms\"\n%s", ckpt, testcluster.CkptUnisolated),
		}, Ready: testcluster.AllReady(testcluster.HasDevices("nvidia/gpu/H200", 8), testcluster.HasDevices("huawei/npu", 8))}
	}
	return testcluster.New(t, testcluster.Options{
		Plugins: []string{"nomad-device-accel", "nomad-driver-ckpt"},
		Clients: []testcluster.ClientSpec{node("gpu-1"), node("gpu-2")},
	})
}

// waitRunning waits until n allocations of the job run and returns them.
func waitRunning(t *testing.T, c *testcluster.Cluster, jobID string, n int) []*api.AllocationListStub {
	t.Helper()
	var running []*api.AllocationListStub
	c.Eventually(2*time.Minute, fmt.Sprintf("%d running allocations of %s", n, jobID), func() error {
		allocs, _, err := c.API.Jobs().Allocations(jobID, false, nil)
		if err != nil {
			return err
		}
		running = running[:0]
		for _, a := range allocs {
			if a.ClientStatus == "running" {
				running = append(running, a)
			}
		}
		if len(running) != n {
			return fmt.Errorf("%d of %d running", len(running), n)
		}
		return nil
	})
	return running
}

// gpusOf counts the device instances of one vendor/type given to an alloc.
func gpusOf(t *testing.T, c *testcluster.Cluster, allocID, vendorType string) int {
	t.Helper()
	alloc, _, err := c.API.Allocations().Info(allocID, nil)
	must.NoError(t, err)
	n := 0
	for _, tr := range alloc.AllocatedResources.Tasks {
		for _, d := range tr.Devices {
			if d.Vendor+"/"+d.Type == vendorType {
				n += len(d.DeviceIDs)
			}
		}
	}
	return n
}

// realPython resolves python3 to its real executable (not a pyenv shim,
// which needs the caller's environment).
func realPython(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	must.NoError(t, err, must.Sprint("the service jobspecs use python3 -m http.server as their toy payload"))
	p := strings.TrimSpace(string(out))
	_, err = os.Stat(p)
	must.NoError(t, err)
	return p
}
