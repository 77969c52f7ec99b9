package ckpt

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/drivers/rawexec"
	"github.com/hashicorp/nomad/helper/uuid"
	"github.com/hashicorp/nomad/plugins/base"
	"github.com/hashicorp/nomad/plugins/drivers"
	dtestutil "github.com/hashicorp/nomad/plugins/drivers/testutils"
	"github.com/shoenig/test/must"
)

// The benchmarks compare ckpt with Nomad's raw_exec across the same gRPC
// plugin boundary and the same executor, with the Go toy trainer as the
// task: on ckpt it checkpoints at once on SIGUSR1 and exits; on raw_exec
// it exits at once on SIGINT. Run them with
//
//	go test -run '^$' -bench . -benchtime 20x ./task-driver/ckpt/

// toyTrainer builds the Go toy trainer for one benchmark.
func toyTrainer(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "toytrainer")
	out, err := exec.Command("go", "build", "-o", bin, "../toytrainer").CombinedOutput()
	must.NoError(b, err, must.Sprintf("building toytrainer: %s", out))
	return bin
}

// trainerArgs make the trainer save every step (50ms), so a LATEST file
// shows that it has installed its signal handlers.
var trainerArgs = []string{"-step-time", "50ms", "-save-every", "1"}

// benchDriver is one driver under test.
type benchDriver struct {
	name  string
	setup func(b *testing.B) *dtestutil.DriverHarness
	task  func(trainer string) (any, string) // task config, kill signal
}

func benchDrivers() []benchDriver {
	return []benchDriver{
		{name: "ckpt", setup: func(b *testing.B) *dtestutil.DriverHarness { return harnessB(b) },
			task: func(tr string) (any, string) {
				return &TaskConfig{Command: tr, Args: trainerArgs,
					Checkpoint: CheckpointConfig{Signal: "SIGUSR1", Timeout: "5s"}}, "SIGINT"
			}},
		{name: "raw_exec", setup: rawExecHarness,
			task: func(tr string) (any, string) {
				return &rawexec.TaskConfig{Command: tr, Args: trainerArgs}, "SIGINT"
			}},
	}
}

// benchT lets a benchmark use Nomad's driver harness, which wants a T.
type benchT struct{ *testing.B }

// Parallel is a no-op; benchmarks do not run in parallel here.
func (benchT) Parallel() {}

func harnessB(b *testing.B) *dtestutil.DriverHarness {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	h := dtestutil.NewDriverHarness(benchT{b}, New(ctx, hclog.NewNullLogger()))
	cfg := legacyConfig(b.TempDir())
	fillDefaults(cfg)
	var data []byte
	must.NoError(b, base.MsgPackEncode(&data, cfg))
	must.NoError(b, h.SetConfig(&base.Config{PluginConfig: data}))
	return h
}

func rawExecHarness(b *testing.B) *dtestutil.DriverHarness {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	h := dtestutil.NewDriverHarness(benchT{b}, rawexec.NewRawExecDriver(ctx, hclog.NewNullLogger()))
	var data []byte
	must.NoError(b, base.MsgPackEncode(&data, &rawexec.Config{Enabled: true, NoCgroups: true}))
	must.NoError(b, h.SetConfig(&base.Config{PluginConfig: data}))
	return h
}

// benchTask prepares (untimed) a task for one iteration, with a fresh job
// ID so each run gets a fresh checkpoint dir. raw_exec tasks get a
// checkpoint dir through the env, as the trainer needs one. The task is
// destroyed and its alloc dir removed when the benchmark ends, even when it
// fails (the alloc dir cleanup also closes the harness connection, so it
// cannot run earlier).
func benchTask(b *testing.B, h *dtestutil.DriverHarness, tc any) *drivers.TaskConfig {
	cfg := &drivers.TaskConfig{ID: uuid.Generate(), AllocID: uuid.Generate(), Name: "train",
		JobID: "bench-" + uuid.Short(), TaskGroupName: "g", Namespace: "default",
		Env: map[string]string{EnvCheckpointDir: b.TempDir()}}
	must.NoError(b, cfg.EncodeConcreteDriverConfig(tc))
	cleanup := allocDirCleanup(cfg, h.MkAllocDir(cfg, false))
	b.Cleanup(func() {
		_ = h.Impl().DestroyTask(cfg.ID, true)
		cleanup()
	})
	return cfg
}

// waitReady waits until the trainer has written LATEST once.
func waitReady(b *testing.B, h *dtestutil.DriverHarness, cfg *drivers.TaskConfig) {
	dir := cfg.Env[EnvCheckpointDir]
	if st, err := h.InspectTask(cfg.ID); err == nil && st.DriverAttributes["checkpoint_dir"] != "" {
		dir = st.DriverAttributes["checkpoint_dir"]
	}
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := ReadLatest(dir, ownerUID(dir)); err == nil {
			return
		}
		select {
		case <-deadline:
			b.Fatalf("trainer did not write %s/LATEST", dir)
		case <-tick.C:
		}
	}
}

// waitDone waits for the task's exit result.
func waitDone(b *testing.B, h *dtestutil.DriverHarness, id string) {
	ch, err := h.WaitTask(context.Background(), id)
	must.NoError(b, err)
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		b.Fatalf("task %s did not exit", id)
	}
}

// BenchmarkStartTask measures StartTask until the task runs.
func BenchmarkStartTask(b *testing.B) {
	tr := toyTrainer(b)
	for _, d := range benchDrivers() {
		b.Run(d.name, func(b *testing.B) {
			h := d.setup(b)
			tc, sig := d.task(tr)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				cfg := benchTask(b, h, tc)
				b.StartTimer()
				_, _, err := h.StartTask(cfg)
				must.NoError(b, err)
				b.StopTimer()
				waitReady(b, h, cfg)
				must.NoError(b, h.StopTask(cfg.ID, 5*time.Second, sig))
				waitDone(b, h, cfg.ID)
			}
		})
	}
}

// BenchmarkStopTask measures StopTask until the task has exited, for a task
// that checkpoints (ckpt) or exits (raw_exec) at once.
func BenchmarkStopTask(b *testing.B) {
	tr := toyTrainer(b)
	for _, d := range benchDrivers() {
		b.Run(d.name, func(b *testing.B) {
			h := d.setup(b)
			tc, sig := d.task(tr)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				cfg := benchTask(b, h, tc)
				_, _, err := h.StartTask(cfg)
				must.NoError(b, err)
				waitReady(b, h, cfg)
				b.StartTimer()
				must.NoError(b, h.StopTask(cfg.ID, 5*time.Second, sig))
				waitDone(b, h, cfg.ID)
				b.StopTimer()
			}
		})
	}
}
