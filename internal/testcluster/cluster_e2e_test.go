//go:build e2e

package testcluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// smokeJob is a raw_exec batch job for one node pool; it prints the name of
// the node it ran on.
const smokeJob = `
variable "pool" { type = string }

job "smoke" {
  type      = "batch"
  node_pool = var.pool

  group "g" {
    task "hello" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello from $${node.unique.name}"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// sleeperJob keeps one task running so a client restart can be observed.
const sleeperJob = `
job "sleeper" {
  type      = "batch"
  node_pool = "gpu"

  group "g" {
    task "sleep" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

func TestE2E_SmokeTwoPools(t *testing.T) {
	c := New(t, Options{Clients: []ClientSpec{
		{Name: "cpu-1", NodePool: "cpu", NodeClass: "general", Meta: map[string]string{"rack": "r1"}},
		{Name: "gpu-1", NodePool: "gpu", NodeClass: "accel", Meta: map[string]string{"rack": "r2"}},
	}})

	t.Run("clients carry their pool class and meta", func(t *testing.T) {
		for _, cl := range c.Clients {
			node := c.Node(cl)
			must.Eq(t, cl.Spec.NodePool, node.NodePool)
			must.Eq(t, cl.Spec.NodeClass, node.NodeClass)
			must.Eq(t, cl.Spec.Meta["rack"], node.Meta["rack"])
			must.Eq(t, cl.Name(), node.Name)
		}
	})

	t.Run("a batch job constrained to a pool lands there and completes", func(t *testing.T) {
		for _, pool := range []string{"gpu", "cpu"} {
			src := strings.Replace(smokeJob, `job "smoke"`, fmt.Sprintf(`job "smoke-%s"`, pool), 1)
			job, _ := c.RegisterHCL("smoke.nomad.hcl", src, "pool="+pool)
			alloc := c.WaitForAlloc(api.DefaultNamespace, *job.ID, time.Minute, ClientStatus(api.AllocClientStatusComplete))
			want := c.Client(pool + "-1")
			must.Eq(t, want.NodeID, alloc.NodeID)
			must.StrContains(t, c.TaskLogs(alloc.ID, "hello", "stdout"), "hello from "+want.Name())
			c.WaitForJobStatus(api.DefaultNamespace, *job.ID, "dead", time.Minute)
		}
	})

	t.Run("a client restart keeps the node identity and its running task", func(t *testing.T) {
		job, _ := c.RegisterHCL("sleeper.nomad.hcl", sleeperJob)
		gpu := c.Client("gpu-1")
		before := c.WaitForAlloc(api.DefaultNamespace, *job.ID, time.Minute, ClientStatus(api.AllocClientStatusRunning))
		oldID := gpu.NodeID

		c.RestartClient(gpu)

		must.Eq(t, oldID, gpu.NodeID)
		must.Eq(t, api.NodeStatusReady, c.Node(gpu).Status)
		after := c.WaitForAlloc(api.DefaultNamespace, *job.ID, time.Minute, ClientStatus(api.AllocClientStatusRunning))
		must.Eq(t, before.ID, after.ID)
		events := c.TaskEvents(after.ID, "sleep")
		for _, e := range events {
			must.NotEq(t, api.TaskRestarting, e.Type, must.Sprintf("task restarted across the agent restart: %+v", events))
		}
	})
}
