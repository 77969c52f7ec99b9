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
// (raw_exec). ckpt runs on three clients: isolation = "chroot" (its
// default) with a minimal chroot_env (the static trainer and the user
// database) and with the e2e suite's lean one (shell, C libraries, Python:
// about 6,600 files), and isolation = "none" (the universal executor
// raw_exec uses). Each iteration runs every variant once, in turn, so load
// from elsewhere hits them alike. A run registers a job, waits until the
// trainer has saved once (so its signal handlers are in place), then times
// the job stop until the allocation is complete. Per variant it reports,
// from the client's own task event timestamps, Killing→Terminated (the
// driver's stop), Task Setup→Started (the driver's start plus the chroot
// the client builds) and deregister→complete (includes Nomad's 200ms
// client→server update batching); ns/op is the sum over the variants.
//
//	go test -tags e2e -run '^$' -bench E2EStop -benchtime 10x ./task-driver/e2e/
func BenchmarkE2EStop(b *testing.B) {
	trainerDir := b.TempDir()
	trainer := testcluster.BuildToyTrainer(b, trainerDir)
	openToAll(b, trainerDir)
	root := b.TempDir()
	cfg := fmt.Sprintf("checkpoint_root = %q", root)
	// The universal executor chdirs into the task dir under the client's
	// 0700 data dir, out of nobody's reach: the unisolated variant runs as
	// root, like raw_exec.
	none := cfg + "\n" + testcluster.CkptUnisolated
	minimal := map[string]string{trainerDir: trainerDir, "/etc/passwd": "/etc/passwd", "/etc/group": "/etc/group"}
	c := testcluster.New(b, testcluster.Options{
		Plugins: []string{"nomad-driver-ckpt"},
		Clients: []testcluster.ClientSpec{
			{Name: "bench-chroot", PluginConfig: map[string]string{"nomad-driver-ckpt": cfg}, ChrootEnv: minimal},
			{Name: "bench-lean", PluginConfig: map[string]string{"nomad-driver-ckpt": cfg}, ChrootEnv: leanChroot(trainerDir)},
			{Name: "bench-none", PluginConfig: map[string]string{"nomad-driver-ckpt": none}},
		},
	})
	variants := []*benchVariant{
		{name: "ckpt-chroot", driver: "ckpt", node: "bench-chroot"}, {name: "ckpt-chroot-lean", driver: "ckpt", node: "bench-lean"},
		{name: "ckpt-none", driver: "ckpt", node: "bench-none"}, {name: "raw_exec", driver: "raw_exec", node: "bench-none"},
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, v := range variants {
			v.once(b, c, trainer, root)
		}
	}
	for _, v := range variants {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
		b.ReportMetric(ms(v.stop), v.name+"-ms-killing-to-terminated/op")
		b.ReportMetric(ms(v.start), v.name+"-ms-setup-to-started/op")
		b.ReportMetric(ms(v.complete), v.name+"-ms-deregister-to-complete/op")
	}
}

// benchVariant is one driver setup of BenchmarkE2EStop and its totals.
type benchVariant struct {
	name, driver, node    string
	stop, start, complete time.Duration
}

// once runs one job of the variant and adds its timings.
func (v *benchVariant) once(b *testing.B, c *testcluster.Cluster, trainer, root string) {
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
	t0 := time.Now()
	_, _, err := c.API.Jobs().Deregister(id, false, nil)
	must.NoError(b, err)
	c.WaitForAlloc(api.DefaultNamespace, id, time.Minute, testcluster.ClientStatus(api.AllocClientStatusComplete))
	v.complete += time.Since(t0)
	b.StopTimer()
	events := c.TaskEvents(alloc.ID, "train")
	v.stop += between(b, events, api.TaskKilling, api.TaskTerminated)
	v.start += between(b, events, api.TaskSetup, api.TaskStarted)
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
