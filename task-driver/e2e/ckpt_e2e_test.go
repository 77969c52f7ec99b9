//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
)

// TestE2E_CheckpointDriver runs every ckpt scenario on one cluster with one
// client, one after another (the preemption case needs the node to itself).
//
// The driver runs with its defaults: isolation = "chroot" (Nomad's
// isolating executor) and tasks as nobody. The client's chroot holds the
// trainer's directory, the jobspecs and a lean system (leanChroot).
func TestE2E_CheckpointDriver(t *testing.T) {
	trainerDir := t.TempDir()
	trainer := testcluster.BuildToyTrainer(t, trainerDir)
	openToAll(t, trainerDir)
	ckptRoot := t.TempDir()
	repo, err := testcluster.RepoRoot()
	must.NoError(t, err)
	c := testcluster.New(t, testcluster.Options{
		Plugins: []string{"nomad-driver-ckpt"},
		Clients: []testcluster.ClientSpec{{
			Name: "ckpt-1",
			PluginConfig: map[string]string{"nomad-driver-ckpt": fmt.Sprintf(
				"checkpoint_root = %q\npoll_interval = \"100ms\"\nsaved_event_interval = \"1s\"\nmax_kill_timeout = \"10m\"", ckptRoot)},
			ChrootEnv: leanChroot(trainerDir, filepath.Join(repo, "jobspecs")),
		}},
	})
	s := &suite{c: c, trainer: trainer, root: ckptRoot}
	t.Run("a: periodic checkpoints show as events in nomad alloc status", s.periodic)
	t.Run("python: the example jobspec with allot_checkpoint.py stops, saves and resumes", s.python)
	t.Run("b: nomad alloc stop checkpoints and the replacement resumes", s.allocStop)
	t.Run("c: a task that ignores the signal times out and is killed within kill_timeout", s.ignoresSignal)
	t.Run("config: bad signal fails clearly, a too long checkpoint timeout warns", s.configErrors)
	t.Run("limits: memory over the limit is OOM-killed, within it runs, cgroups hold the limits", s.limits)
	t.Run("e: a client restart keeps the task, recovers it, and a later stop still checkpoints", s.clientRestart)
	t.Run("d: Nomad preemption evicts a ckpt job that checkpoints and later resumes", s.preemption)
	t.Run("drain: a node drain checkpoints the task", s.drain)
}

// suite is the shared cluster of the ckpt scenarios.
type suite struct {
	c       *testcluster.Cluster
	trainer string
	root    string
}

// dirOf is the checkpoint dir of a job's task "train" in group "g".
func (s *suite) dirOf(jobID string) string {
	return filepath.Join(s.root, "default", jobID, "g", "0", "train")
}

// periodic is scenario a: periodic checkpoints show as events in nomad alloc status.
func (s *suite) periodic(t *testing.T) {
	root, err := testcluster.RepoRoot()
	must.NoError(t, err)
	job, _ := s.c.RegisterHCLFile(filepath.Join(root, "jobspecs", "train-checkpoint.nomad.hcl"),
		"command="+s.trainer, `args=["-save-every","10","-step-time","20ms"]`,
		"checkpoint_timeout=4s", "kill_timeout=6s")
	alloc := running(s.c, *job.ID)
	ev := waitEvent(t, s.c, alloc.ID, `^Checkpoint saved: .* step \d+ \(`, time.Minute)
	must.Eq(t, "periodic", ev.Details["trigger"])
	must.StrContains(t, ev.Details["checkpoint_path"], filepath.Join(s.root, "default", "train-checkpoint", "train", "0", "train"))
	must.Positive(t, atoi(t, ev.Details["checkpoint_step"]))
	must.Positive(t, atoi(t, ev.Details["checkpoint_unix_time"]))

	nomad, err := testcluster.NomadBinary()
	must.NoError(t, err)
	out, err := exec.Command(nomad, "alloc", "status", "-address="+s.c.Addr(), alloc.ID).CombinedOutput()
	must.NoError(t, err, must.Sprintf("nomad alloc status: %s", out))
	must.StrContains(t, string(out), "Checkpoint saved: ")

	info, err := os.Stat(filepath.Join(s.root, "default", "train-checkpoint", "train", "0", "train"))
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o700), info.Mode().Perm())
	stopJob(t, s.c, *job.ID)
}

// python is scenario python: the example jobspec with allot_checkpoint.py stops, saves and resumes.
func (s *suite) python(t *testing.T) {
	if !hasPython() {
		t.Skipf("%s is not installed; the Go s.trainer covers the protocol", pythonInChroot)
	}
	python := pythonInChroot
	root, err := testcluster.RepoRoot()
	must.NoError(t, err)
	// Subtest a ran the same job with the Go s.trainer; start clean.
	must.NoError(t, os.RemoveAll(filepath.Join(s.root, "default", "train-checkpoint")))
	script := filepath.Join(root, "jobspecs", "toy_train.py")
	job, _ := s.c.RegisterHCLFile(filepath.Join(root, "jobspecs", "train-checkpoint.nomad.hcl"),
		"command="+python, fmt.Sprintf(`args=[%q,"--steps","100000","--save-every","20","--step-time","0.01"]`, script),
		"checkpoint_timeout=5s", "kill_timeout=8s")
	first := running(s.c, *job.ID)
	periodic := waitEvent(t, s.c, first.ID, `^Checkpoint saved: .*\.ckpt step \d+ \(`, time.Minute)
	must.Eq(t, "periodic", periodic.Details["trigger"])

	_, err = s.c.API.Allocations().Stop(&api.Allocation{ID: first.ID, Namespace: api.DefaultNamespace}, nil)
	must.NoError(t, err)
	var saved *api.TaskEvent
	s.c.Eventually(time.Minute, "a requested checkpoint", func() error {
		for _, e := range s.c.TaskEvents(first.ID, "train") {
			if e.Details["trigger"] == "requested" && strings.HasPrefix(e.DisplayMessage, "Checkpoint saved") {
				saved = e
				return nil
			}
		}
		return fmt.Errorf("events: %s", describe(s.c.TaskEvents(first.ID, "train")))
	})
	next := running(s.c, *job.ID, first.ID)
	m := waitLog(t, s.c, next.ID, `toy_train: starting at step (\d+)\n`, time.Minute)
	must.Eq(t, saved.Details["checkpoint_step"], m[1])
	must.StrContains(t, s.c.TaskLogs(first.ID, "train", "stdout"), "toy_train: stopping as requested")
	stopJob(t, s.c, *job.ID)
}

// allocStop is scenario b: nomad alloc stop checkpoints and the replacement resumes.
func (s *suite) allocStop(t *testing.T) {
	j := job("resume").underShell().trainerArgs("-step-time", "10ms", "-progress-every", "50")
	job, _ := s.c.RegisterHCL("resume.nomad.hcl", j.hcl(s.trainer))
	first := running(s.c, *job.ID)
	waitLog(t, s.c, first.ID, `toytrainer: step 100\n`, time.Minute)

	_, err := s.c.API.Allocations().Stop(&api.Allocation{ID: first.ID, Namespace: api.DefaultNamespace}, nil)
	must.NoError(t, err)
	waitEvent(t, s.c, first.ID, `^Checkpoint requested$`, time.Minute)
	saved := waitEvent(t, s.c, first.ID, `^Checkpoint saved: .* step \d+ \(`, time.Minute)
	must.Eq(t, "requested", saved.Details["trigger"])
	step := atoi(t, saved.Details["checkpoint_step"])
	must.GreaterEq(t, 100, step)
	must.StrHasPrefix(t, s.dirOf("resume"), saved.Details["checkpoint_path"])

	next := running(s.c, *job.ID, first.ID)
	m := waitLog(t, s.c, next.ID, `toytrainer: starting at step (\d+)\n`, time.Minute)
	must.Eq(t, step, atoi(t, m[1]), must.Sprint("the replacement resumes from the saved step, not from 0"))
	resume := waitEvent(t, s.c, next.ID, `^Checkpoint resume: `, time.Minute)
	must.Eq(t, saved.Details["checkpoint_step"], resume.Details["checkpoint_step"])
	t.Logf("stopped alloc: %s", describe(s.c.TaskEvents(first.ID, "train")))
	t.Logf("replacement: %s", describe(s.c.TaskEvents(next.ID, "train")))
	stopJob(t, s.c, *job.ID)
}

// ignoresSignal is scenario c: a task that ignores the signal times out and is killed within kill_timeout.
func (s *suite) ignoresSignal(t *testing.T) {
	j := job("stubborn").trainerArgs("-ignore-signals", "-step-time", "10ms").timeouts("2s", "5s")
	job, _ := s.c.RegisterHCL("stubborn.nomad.hcl", j.hcl(s.trainer))
	alloc := running(s.c, *job.ID)
	waitLog(t, s.c, alloc.ID, `starting at step 0`, time.Minute)
	stopJob(t, s.c, *job.ID)

	requested := waitEvent(t, s.c, alloc.ID, `^Checkpoint requested$`, 10*time.Second)
	timedOut := waitEvent(t, s.c, alloc.ID, `^Checkpoint timed out after 2`, 10*time.Second)
	killed := waitEvent(t, s.c, alloc.ID, `^Task successfully killed|^Task killed`, 10*time.Second)
	waited := time.Duration(timedOut.Time - requested.Time)
	must.Between(t, 2*time.Second, waited, 3*time.Second)
	total := time.Duration(killed.Time - requested.Time)
	must.Between(t, 5*time.Second, total, 7*time.Second, must.Sprintf("SIGKILL at kill_timeout 5s; events: %s",
		describe(s.c.TaskEvents(alloc.ID, "train"))))
	must.StrNotContains(t, s.c.TaskLogs(alloc.ID, "train", "stdout"), "checkpointed")
	t.Logf("events: %s", describe(s.c.TaskEvents(alloc.ID, "train")))
}

// configErrors is scenario config: bad signal fails clearly, a too long checkpoint timeout warns.
func (s *suite) configErrors(t *testing.T) {
	bad := strings.Replace(job("badsig").trainerArgs().hcl(s.trainer), `"SIGUSR1"`, `"SIGBOGUS"`, 1)
	job1, _ := s.c.RegisterHCL("badsig.nomad.hcl", bad)
	alloc := s.c.WaitForAlloc(api.DefaultNamespace, *job1.ID, time.Minute, testcluster.ClientStatus(api.AllocClientStatusFailed))
	failure := waitEvent(t, s.c, alloc.ID, `checkpoint\.signal: invalid signal "SIGBOGUS"`, 10*time.Second)
	must.Eq(t, api.TaskDriverFailure, failure.Type)

	j := job("longckpt").trainerArgs("-ignore-signals").timeouts("30s", "2s")
	job2, _ := s.c.RegisterHCL("longckpt.nomad.hcl", j.hcl(s.trainer))
	alloc = running(s.c, *job2.ID)
	waitLog(t, s.c, alloc.ID, `starting at step 0`, time.Minute)
	stopJob(t, s.c, *job2.ID)
	waitEvent(t, s.c, alloc.ID, `^Checkpoint warning: checkpoint timeout 30s is not below the kill_timeout 2s`, 10*time.Second)
	waitEvent(t, s.c, alloc.ID, `^Checkpoint timed out after 1\.8`, 10*time.Second)
	t.Logf("events: %s", describe(s.c.TaskEvents(alloc.ID, "train")))

	// kill_timeout above the client's max_kill_timeout (10m) and a
	// checkpoint timeout that cannot fit: warned at start; the task still
	// checkpoints at once when stopped.
	j = job("toolong").trainerArgs("-step-time", "10ms").timeouts("11m", "12m")
	job4, _ := s.c.RegisterHCL("toolong.nomad.hcl", j.hcl(s.trainer))
	alloc = running(s.c, *job4.ID)
	waitEvent(t, s.c, alloc.ID, `^Checkpoint warning: checkpoint timeout 11m0s is not below the client's max_kill_timeout 10m0s`, time.Minute)
	waitLog(t, s.c, alloc.ID, `starting at step 0`, time.Minute)
	stopJob(t, s.c, *job4.ID)
	waitEvent(t, s.c, alloc.ID, `^Checkpoint warning: checkpoint timeout 11m0s is not below the kill_timeout 10m0s`, 10*time.Second)
	waitEvent(t, s.c, alloc.ID, `^Checkpoint saved: `, 10*time.Second)

	job3, _ := s.c.RegisterHCL("noblock.nomad.hcl", noBlockJob)
	alloc = running(s.c, *job3.ID)
	waitLog(t, s.c, alloc.ID, `sig=SIGUSR1 dir=`+regexp.QuoteMeta(s.dirOf("noblock"))+`\n`, time.Minute)
	// Isolated by default: nobody, PID 1 of its own namespace, in a chroot
	// without the host's /root.
	waitLog(t, s.c, alloc.ID, `uid=65534 pid=1 host_root=no\n`, time.Minute)
	stopJob(t, s.c, *job3.ID)
}

// clientRestart is scenario e: a client restart keeps the task, recovers it, and a later stop still checkpoints.
func (s *suite) clientRestart(t *testing.T) {
	j := job("survivor").trainerArgs("-step-time", "10ms", "-progress-every", "50")
	job, _ := s.c.RegisterHCL("survivor.nomad.hcl", j.hcl(s.trainer))
	before := running(s.c, *job.ID)
	waitLog(t, s.c, before.ID, `toytrainer: step 50\n`, time.Minute)

	s.c.RestartClient(s.c.Client("ckpt-1"))

	after := running(s.c, *job.ID)
	must.Eq(t, before.ID, after.ID)
	// The same process kept counting: one start line, and steps go on.
	waitLog(t, s.c, after.ID, `toytrainer: step [1-9]\d{2,}\n`, time.Minute)
	must.Eq(t, 1, strings.Count(s.c.TaskLogs(after.ID, "train", "stdout"), "starting at step"))
	for _, e := range s.c.TaskEvents(after.ID, "train") {
		must.NotEq(t, api.TaskRestarting, e.Type, must.Sprintf("restarted: %s", describe(s.c.TaskEvents(after.ID, "train"))))
		// RecoverTask re-applies the limits; that must work on a task already limited.
		must.StrNotContains(t, e.DisplayMessage, "Resource limits not enforced")
	}
	stopJob(t, s.c, *job.ID)
	saved := waitEvent(t, s.c, after.ID, `^Checkpoint saved: .* step \d+ \(`, 10*time.Second)
	must.Eq(t, "requested", saved.Details["trigger"])
	t.Logf("recovered alloc: %s", describe(s.c.TaskEvents(after.ID, "train")))
}

// preemption is scenario d: Nomad preemption evicts a ckpt job that checkpoints and later resumes.
func (s *suite) preemption(t *testing.T) {
	s.c.EnablePreemption()
	node := s.c.Node(s.c.Client("ckpt-1"))
	share := int(node.NodeResources.Cpu.CpuShares) * 6 / 10
	victimJob := job("victim").prio(30).cpuMHz(share).trainerArgs("-step-time", "10ms", "-progress-every", "50")
	victim, _ := s.c.RegisterHCL("victim.nomad.hcl", victimJob.hcl(s.trainer))
	first := running(s.c, *victim.ID)
	waitLog(t, s.c, first.ID, `toytrainer: step 100\n`, time.Minute)

	urgent, _ := s.c.RegisterHCL("urgent.nomad.hcl", fmt.Sprintf(urgentJob, share))
	saved := waitEvent(t, s.c, first.ID, `^Checkpoint saved: .* step \d+ \(`, time.Minute)
	step := atoi(t, saved.Details["checkpoint_step"])
	s.c.WaitForAlloc(api.DefaultNamespace, *urgent.ID, time.Minute, testcluster.ClientStatus(api.AllocClientStatusComplete))

	next := running(s.c, *victim.ID, first.ID)
	m := waitLog(t, s.c, next.ID, `toytrainer: starting at step (\d+)\n`, time.Minute)
	must.Eq(t, step, atoi(t, m[1]))
	evicted, _, err := s.c.API.Allocations().Info(first.ID, nil)
	must.NoError(t, err)
	must.Eq(t, api.AllocDesiredStatusEvict, evicted.DesiredStatus, must.Sprint("the victim was evicted by preemption"))
	must.NotEq(t, "", evicted.PreemptedByAllocation)
	t.Logf("victim: %s", describe(s.c.TaskEvents(first.ID, "train")))
	stopJob(t, s.c, *victim.ID)
}

// drain is scenario drain: draining the node runs the stop protocol too.
func (s *suite) drain(t *testing.T) {
	j := job("drained").trainerArgs("-step-time", "10ms", "-progress-every", "50")
	job, _ := s.c.RegisterHCL("drained.nomad.hcl", j.hcl(s.trainer))
	alloc := running(s.c, *job.ID)
	waitLog(t, s.c, alloc.ID, `toytrainer: step 50\n`, time.Minute)
	node := s.c.Client("ckpt-1").NodeID
	_, err := s.c.API.Nodes().UpdateDrain(node, &api.DrainSpec{Deadline: time.Second}, false, nil)
	must.NoError(t, err)
	t.Cleanup(func() { _, _ = s.c.API.Nodes().UpdateDrain(node, nil, true, nil) })
	saved := waitEvent(t, s.c, alloc.ID, `^Checkpoint saved: .* step \d+ \(`, time.Minute)
	must.Eq(t, "requested", saved.Details["trigger"])
	must.GreaterEq(t, 50, atoi(t, saved.Details["checkpoint_step"]))
	t.Logf("drained alloc: %s", describe(s.c.TaskEvents(alloc.ID, "train")))
}

// noBlockJob has no checkpoint block: the plugin defaults apply.
const noBlockJob = `
job "noblock" {
  type = "batch"
  group "g" {
    task "train" {
      driver = "ckpt"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo sig=$ALLOT_CHECKPOINT_SIGNAL dir=$ALLOT_CHECKPOINT_DIR; echo uid=$(id -u) pid=$$ host_root=$(test -e /root && echo yes || echo no); exec sleep 300"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}`

// urgentJob is a priority-90 batch job that needs the CPU the victim holds.
const urgentJob = `
job "urgent" {
  type     = "batch"
  priority = 90
  group "g" {
    task "work" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 2"]
      }
      resources {
        cpu    = %d
        memory = 32
      }
    }
  }
}`
