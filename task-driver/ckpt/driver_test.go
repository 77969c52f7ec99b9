package ckpt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/helper/uuid"
	"github.com/hashicorp/nomad/plugins/base"
	"github.com/hashicorp/nomad/plugins/drivers"
	dtestutil "github.com/hashicorp/nomad/plugins/drivers/testutils"
	"github.com/shoenig/test/must"
)

// trapScript is a task that, on the checkpoint signal, writes a checkpoint
// of step 42, replaces LATEST atomically and exits. It records its env once
// the trap is installed, so the env file also says it is ready.
const trapScript = `
d="$ALLOT_CHECKPOINT_DIR"
trap 'echo 42 > "$d/ck-42"; printf "%s\n42\n" "$d/ck-42" > "$d/LATEST.tmp"; mv "$d/LATEST.tmp" "$d/LATEST"; exit 0' USR1
echo "resume=$ALLOT_RESUME_FROM step=$ALLOT_RESUME_STEP sig=$ALLOT_CHECKPOINT_SIGNAL" > "$d/env-$NOMAD_ALLOC_ID.txt"
while :; do sleep 0.05; done
`

// harness starts a driver behind Nomad's gRPC plugin boundary.
func harness(t *testing.T, root string) *dtestutil.DriverHarness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := New(ctx, hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn}))
	h := dtestutil.NewDriverHarness(t, d)
	cfg := legacyConfig(root)
	cfg.PollInterval, cfg.SavedEventInterval = "50ms", "1s"
	fillDefaults(cfg)
	var data []byte
	must.NoError(t, base.MsgPackEncode(&data, cfg))
	must.NoError(t, h.SetConfig(&base.Config{PluginConfig: data}))
	return h
}

// taskBuilder builds a task config for the harness.
type taskBuilder struct {
	cfg *drivers.TaskConfig
	tc  TaskConfig
}

func shellTask(script string) *taskBuilder {
	return &taskBuilder{
		cfg: &drivers.TaskConfig{ID: uuid.Generate(), AllocID: uuid.Generate(), Name: "train",
			JobID: "train", JobName: "train", TaskGroupName: "web", Namespace: "default"},
		tc: TaskConfig{Command: "/bin/sh", Args: []string{"-c", script},
			Checkpoint: CheckpointConfig{Signal: "SIGUSR1", Timeout: "3s"}},
	}
}

func (b *taskBuilder) signal(s string) *taskBuilder { b.tc.Checkpoint.Signal = s; return b }

func (b *taskBuilder) build(t *testing.T, h *dtestutil.DriverHarness) *drivers.TaskConfig {
	t.Helper()
	must.NoError(t, b.cfg.EncodeConcreteDriverConfig(&b.tc))
	t.Cleanup(allocDirCleanup(b.cfg, h.MkAllocDir(b.cfg, false)))
	return b.cfg
}

// allocDirCleanup wraps the harness's alloc dir cleanup, which leaves the
// temp dir around the alloc dir behind.
func allocDirCleanup(cfg *drivers.TaskConfig, cleanup func()) func() {
	return func() {
		cleanup()
		_ = os.Remove(filepath.Dir(cfg.AllocDir))
	}
}

// events collects the driver's task events.
type events struct{ ch <-chan *drivers.TaskEvent }

func subscribe(t *testing.T, h *dtestutil.DriverHarness) *events {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := h.TaskEvents(ctx)
	must.NoError(t, err)
	return &events{ch: ch}
}

// next waits for the next event whose message starts with prefix.
func (e *events) next(t *testing.T, prefix string) *drivers.TaskEvent {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-e.ch:
			if strings.HasPrefix(ev.Message, prefix) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no event %q within 20s", prefix)
		}
	}
}

func waitExit(t *testing.T, h *dtestutil.DriverHarness, id string) *drivers.ExitResult {
	t.Helper()
	ch, err := h.WaitTask(context.Background(), id)
	must.NoError(t, err)
	select {
	case res := <-ch:
		return res
	case <-time.After(20 * time.Second):
		t.Fatalf("task %s did not exit", id)
		return nil
	}
}

func TestDriverStopCheckpointsAndNextRunResumes(t *testing.T) {
	root := t.TempDir()
	h := harness(t, root)
	ev := subscribe(t, h)
	task := shellTask(trapScript).build(t, h)
	start(t, h, task)

	dir := filepath.Join(root, "default", "train", "web", "0", "train")
	waitFile(t, filepath.Join(dir, "env-"+task.AllocID+".txt"))
	status, err := h.InspectTask(task.ID)
	must.NoError(t, err)
	must.Eq(t, dir, status.DriverAttributes["checkpoint_dir"])

	must.NoError(t, h.StopTask(task.ID, 10*time.Second, "SIGINT"))
	must.Eq(t, MsgRequested, ev.next(t, "Checkpoint ").Message)
	saved := ev.next(t, "Checkpoint saved")
	must.Eq(t, "42", saved.Annotations[AnnStep])
	must.Eq(t, filepath.Join(dir, "ck-42"), saved.Annotations[AnnPath])
	must.Eq(t, triggerRequested, saved.Annotations[AnnTrigger])
	must.Zero(t, waitExit(t, h, task.ID).ExitCode)
	must.NoError(t, h.DestroyTask(task.ID, false))

	next := shellTask(trapScript).build(t, h)
	start(t, h, next)
	resumed := ev.next(t, "Checkpoint resume")
	must.Eq(t, "42", resumed.Annotations[AnnStep])
	envFile := filepath.Join(dir, "env-"+next.AllocID+".txt")
	waitFile(t, envFile)
	env, err := os.ReadFile(envFile)
	must.NoError(t, err)
	must.StrContains(t, string(env), "resume="+filepath.Join(dir, "ck-42")+" step=42 sig=SIGUSR1")
	must.NoError(t, h.StopTask(next.ID, 10*time.Second, "SIGINT"))
	must.NoError(t, h.DestroyTask(next.ID, true))
}

func TestDriverRecoverTaskReattaches(t *testing.T) {
	root := t.TempDir()
	first := harness(t, root)
	task := shellTask(trapScript).build(t, first)
	handle := start(t, first, task)
	waitFile(t, filepath.Join(root, "default", "train", "web", "0", "train", "env-"+task.AllocID+".txt"))

	// A second driver instance, as after a plugin or client restart,
	// recovers the task from the handle the client persisted.
	second := harness(t, root)
	ev := subscribe(t, second)
	must.NoError(t, second.RecoverTask(handle))
	status, err := second.InspectTask(task.ID)
	must.NoError(t, err)
	must.Eq(t, drivers.TaskStateRunning, status.State)

	must.NoError(t, second.StopTask(task.ID, 10*time.Second, "SIGINT"))
	must.Eq(t, "42", ev.next(t, "Checkpoint saved").Annotations[AnnStep])
	must.NoError(t, second.DestroyTask(task.ID, true))
}

func TestDriverRejectsBadTaskConfig(t *testing.T) {
	h := harness(t, t.TempDir())
	task := shellTask("exit 0").signal("SIGBOGUS").build(t, h)
	_, _, err := h.StartTask(task)
	must.ErrorContains(t, err, "checkpoint.signal")
}

func TestDriverRecoverRejectsBadState(t *testing.T) {
	h := harness(t, t.TempDir())
	handle := drivers.NewTaskHandle(taskHandleVersion)
	handle.Config = &drivers.TaskConfig{ID: "x"}
	must.NoError(t, handle.SetDriverState(&TaskState{Version: 99}))
	must.ErrorContains(t, h.RecoverTask(handle), "state version")
}

// start starts a task and makes sure it is gone when the test ends.
func start(t *testing.T, h *dtestutil.DriverHarness, task *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	handle, _, err := h.StartTask(task)
	must.NoError(t, err)
	// In process, not over gRPC: an alloc dir cleanup that ran earlier may
	// have closed the harness connection already.
	t.Cleanup(func() { _ = h.Impl().DestroyTask(task.ID, true) })
	must.NoError(t, h.WaitUntilStarted(task.ID, 10*time.Second))
	return handle
}

// waitFile waits until path exists and holds a complete last line.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(data), "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within 10s", path)
		}
		<-tick.C
	}
}

func TestDriverRunsAsTaskUserWithOwnerOnlyDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a task as another user needs root")
	}
	root := t.TempDir()
	must.NoError(t, os.Chmod(filepath.Dir(root), 0o711))
	must.NoError(t, os.Chmod(root, 0o711))
	h := harness(t, root)
	b := shellTask(`id -un > "$ALLOT_CHECKPOINT_DIR/whoami"; exec sleep 30`)
	b.cfg.User = "nobody"
	task := b.build(t, h)
	// The harness makes its temp dir owner-only; a Nomad client's data dir
	// lets task users reach their task dir.
	must.NoError(t, os.Chmod(filepath.Dir(task.AllocDir), 0o711))
	start(t, h, task)
	dir := filepath.Join(root, "default", "train", "web", "0", "train")
	waitFile(t, filepath.Join(dir, "whoami"))
	who, err := os.ReadFile(filepath.Join(dir, "whoami"))
	must.NoError(t, err)
	must.Eq(t, "nobody\n", string(who))
	info, err := os.Stat(dir)
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o700), info.Mode().Perm())
	uid, _, err := lookupIDs("nobody")
	must.NoError(t, err)
	must.Eq(t, uint32(uid), info.Sys().(*syscall.Stat_t).Uid)
}

func TestDriverExecAndStats(t *testing.T) {
	h := harness(t, t.TempDir())
	task := shellTask(`exec sleep 30`).build(t, h)
	start(t, h, task)
	res, err := h.ExecTask(task.ID, []string{"/bin/sh", "-c", `echo "$ALLOT_CHECKPOINT_SIGNAL"`}, 10*time.Second)
	must.NoError(t, err)
	must.Zero(t, res.ExitResult.ExitCode)
	must.Eq(t, "SIGUSR1\n", string(res.Stdout))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stats, err := h.TaskStats(ctx, task.ID, 100*time.Millisecond)
	must.NoError(t, err)
	select {
	case s := <-stats:
		must.NotNil(t, s)
		must.NotNil(t, s.ResourceUsage)
	case <-ctx.Done():
		t.Fatal("no task stats within 10s")
	}
}

func TestDriverSignalTaskReachesTheMainProcess(t *testing.T) {
	h := harness(t, t.TempDir())
	d := `"$ALLOT_CHECKPOINT_DIR"`
	task := shellTask(`trap 'echo got > `+d+`/usr2' USR2; echo ready > `+d+`/ready; while :; do sleep 0.05; done`).build(t, h)
	start(t, h, task)
	must.ErrorIs(t, h.Impl().SignalTask(task.ID, "SIGNOPE"), ErrBadSignal)
	status, err := h.InspectTask(task.ID)
	must.NoError(t, err)
	dir := status.DriverAttributes["checkpoint_dir"]
	waitFile(t, filepath.Join(dir, "ready")) // the trap is installed
	must.NoError(t, h.SignalTask(task.ID, "SIGUSR2"))
	waitFile(t, filepath.Join(dir, "usr2"))
}

func TestDriverWarnsWhenTwoTasksShareACheckpointDir(t *testing.T) {
	h := harness(t, t.TempDir())
	ev := subscribe(t, h)
	first := shellTask(`exec sleep 30`).build(t, h)
	start(t, h, first)
	second := shellTask(`exec sleep 30`).build(t, h)
	start(t, h, second)
	warning := ev.next(t, "Checkpoint warning: allocation "+first.AllocID)
	must.Eq(t, second.ID, warning.TaskID)
}
