//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/helper/uuid"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
	"github.com/allot-sh/allot/task-driver/ckpt"
)

// BenchmarkE2EStop compares ckpt with raw_exec on a real cluster: the toy
// trainer checkpoints at once on SIGUSR1 (ckpt) or exits at once on SIGINT
// (raw_exec). ckpt runs twice, on two clients: with isolation = "chroot"
// (its default: Nomad's isolating executor, a lean chroot_env) and with
// isolation = "none" (the universal executor raw_exec uses); both run the
// task as nobody. Each iteration registers a job, waits until the trainer
// has saved once (so its signal handlers are in place), then times the job
// stop until the allocation is complete. Besides ns/op (which includes
// Nomad's 200ms client→server update batching) it reports, from the
// client's own task event timestamps, Killing→Terminated (the driver's
// stop), Task Setup→Started (the driver's start) and Received→Started (the
// whole start on the client, including the chroot the client builds).
//
//	go test -tags e2e -run '^$' -bench E2E -benchtime 10x ./task-driver/e2e/
func BenchmarkE2EStop(b *testing.B) {
	trainerDir := b.TempDir()
	trainer := testcluster.BuildToyTrainer(b, trainerDir)
	openToAll(b, trainerDir)
	root := b.TempDir()
	must.NoError(b, os.Chmod(root, 0o711)) // isolation none: nobody walks to its own dir
	cfg := fmt.Sprintf("checkpoint_root = %q", root)
	c := testcluster.New(b, testcluster.Options{
		Plugins: []string{"nomad-driver-ckpt"},
		Clients: []testcluster.ClientSpec{
			{Name: "bench-chroot", PluginConfig: map[string]string{"nomad-driver-ckpt": cfg}, ChrootEnv: leanChroot(trainerDir)},
			{Name: "bench-none", PluginConfig: map[string]string{"nomad-driver-ckpt": cfg + "\nisolation = \"none\""}},
		},
	})
	for _, v := range []struct{ name, driver, node string }{
		{"ckpt-chroot", "ckpt", "bench-chroot"}, {"ckpt-none", "ckpt", "bench-none"}, {"raw_exec", "raw_exec", "bench-none"},
	} {
		b.Run(v.name, func(b *testing.B) {
			var stop, start, whole time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				id := fmt.Sprintf("bench-%s-%s", v.name, uuid.Short())
				dir := filepath.Join(root, "default", id, "g", "0", "train")
				if v.driver == "raw_exec" {
					must.NoError(b, os.MkdirAll(dir, 0o700))
				}
				c.RegisterHCL(id+".nomad.hcl", benchJob(id, v.driver, v.node, trainer, dir))
				alloc := running(c, id)
				waitLatest(b, c, dir)
				b.StartTimer()
				_, _, err := c.API.Jobs().Deregister(id, false, nil)
				must.NoError(b, err)
				c.WaitForAlloc(api.DefaultNamespace, id, time.Minute, testcluster.ClientStatus(api.AllocClientStatusComplete))
				b.StopTimer()
				events := c.TaskEvents(alloc.ID, "train")
				stop += between(b, events, api.TaskKilling, api.TaskTerminated)
				start += between(b, events, api.TaskSetup, api.TaskStarted)
				whole += between(b, events, api.TaskReceived, api.TaskStarted)
			}
			b.ReportMetric(float64(stop.Microseconds())/1000/float64(b.N), "ms-killing-to-terminated/op")
			b.ReportMetric(float64(start.Microseconds())/1000/float64(b.N), "ms-setup-to-started/op")
			b.ReportMetric(float64(whole.Microseconds())/1000/float64(b.N), "ms-received-to-started/op")
		})
	}
}

// benchJob is the toy trainer as a ckpt or raw_exec batch job.
func benchJob(id, driver, node, trainer, dir string) string {
	ckptBlock := `checkpoint {
          signal  = "SIGUSR1"
          timeout = "5s"
        }`
	env := ""
	if driver == "raw_exec" {
		ckptBlock = ""
		env = fmt.Sprintf(`env {
        ALLOT_CHECKPOINT_DIR = %q
      }`, dir)
	}
	return fmt.Sprintf(`
job %q {
  type = "batch"
  constraint {
    attribute = "${node.unique.name}"
    value     = %q
  }
  group "g" {
    task "train" {
      driver       = %q
      kill_timeout = "10s"
      %s
      config {
        command = %q
        args    = ["-step-time", "50ms", "-save-every", "1"]
        %s
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }
  }
}`, id, node, driver, env, trainer, ckptBlock)
}

// waitLatest waits until the trainer has written LATEST in dir.
func waitLatest(b testing.TB, c *testcluster.Cluster, dir string) {
	c.Eventually(30*time.Second, "the trainer's first checkpoint", func() error {
		_, err := os.Stat(filepath.Join(dir, ckpt.LatestFile))
		return err
	})
}

// between is the time from the first event of type from to the first
// later event of type to.
func between(b *testing.B, events []*api.TaskEvent, from, to string) time.Duration {
	var t0 int64
	for _, e := range events {
		switch {
		case e.Type == from && t0 == 0:
			t0 = e.Time
		case e.Type == to && t0 != 0:
			return time.Duration(e.Time - t0)
		}
	}
	b.Fatalf("no %s → %s in events %s", from, to, describe(events))
	return 0
}
