package ckpt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/nomad/structs"
	"github.com/hashicorp/nomad/plugins/base"
	"github.com/hashicorp/nomad/plugins/drivers"
	dtestutil "github.com/hashicorp/nomad/plugins/drivers/testutils"
	"github.com/shoenig/test/must"
)

// pidLimiter records the pids the driver asks it to move into cgroups.
type pidLimiter struct {
	mu   sync.Mutex
	pids []int
}

func (l *pidLimiter) Apply(pid int, _ limits) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pids = append(l.pids, pid)
	return nil
}
func (l *pidLimiter) OOMKilled() bool { return false }
func (l *pidLimiter) Remove() error   { return nil }

func (l *pidLimiter) applied() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.pids...)
}

// recoveringHarness is a second driver instance, as after a client
// restart, that enforces limits (cgroups on) through a pidLimiter.
func recoveringHarness(t *testing.T, root string) (*dtestutil.DriverHarness, *pidLimiter) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := New(ctx, hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn}))
	lim := &pidLimiter{}
	d.newLimiter = func(*drivers.TaskConfig) limiter { return lim }
	h := dtestutil.NewDriverHarness(t, d)
	cfg := legacyConfig(root)
	cfg.NoCgroups = false
	cfg.PollInterval, cfg.SavedEventInterval = "50ms", "1s"
	fillDefaults(cfg)
	var data []byte
	must.NoError(t, base.MsgPackEncode(&data, cfg))
	must.NoError(t, h.SetConfig(&base.Config{PluginConfig: data}))
	return h, lim
}

// limitedTrapTask is the trap task with a memory limit, so recovery has
// limits to enforce.
func limitedTrapTask(t *testing.T, h *dtestutil.DriverHarness) *drivers.TaskConfig {
	return limited(shellTask(trapScript)).build(t, h)
}

// limited gives a task a memory limit.
func limited(b *taskBuilder) *taskBuilder {
	b.cfg.Resources = &drivers.Resources{NomadResources: &structs.AllocatedTaskResources{
		Memory: structs.AllocatedMemoryResources{MemoryMB: 64},
	}}
	return b
}

// editState rewrites the driver state recorded in a copy of handle.
func editState(t *testing.T, handle *drivers.TaskHandle, edit func(*TaskState)) *drivers.TaskHandle {
	t.Helper()
	out := handle.Copy()
	var st TaskState
	must.NoError(t, out.GetDriverState(&st))
	edit(&st)
	must.NoError(t, out.SetDriverState(&st))
	return out
}

// bystander is a process that is not the task: a sleep leading its own
// process group, as a task's recycled pid would.
type bystander struct {
	pid    int
	id     procIdentity
	cgroup string
}

// startBystander starts a sleep leading its own process group, in a later
// clock tick than the task's start (ticks are 10ms; a process started in
// the same tick as the task would look like the task).
func startBystander(t *testing.T, taskTicks uint64) *bystander {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b := spawnBystander(t); b.id.StartTicks != taskTicks {
			return b
		}
	}
	t.Fatal("every bystander started in the task's clock tick")
	return nil
}

func spawnBystander(t *testing.T) *bystander {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must.NoError(t, cmd.Start())
	go func() { _ = cmd.Wait() }() // reaps it, so a killed bystander disappears
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	b := &bystander{pid: cmd.Process.Pid}
	var err error
	b.id, err = readProcIdentity(defaultProcRoot, b.pid)
	must.NoError(t, err)
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", b.pid))
	must.NoError(t, err)
	b.cgroup = string(cg)
	return b
}

// untouched asserts the bystander is still the same running process (no
// signal killed it) and sits in the cgroups it started in.
func (b *bystander) untouched(t *testing.T) {
	t.Helper()
	g := pidGuard{procRoot: defaultProcRoot, pid: b.pid, want: b.id}
	must.NoError(t, g.check(), must.Sprintf("bystander pid %d is gone", b.pid))
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.pid))
	must.NoError(t, err)
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	must.NotEq(t, "Z", fields[0], must.Sprint("the bystander was killed"))
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", b.pid))
	must.NoError(t, err)
	must.Eq(t, b.cgroup, string(cg), must.Sprint("the bystander was moved to other cgroups"))
}

// subscribeInProcess subscribes to the driver's events in process, which
// registers the consumer before it returns (over gRPC that happens later,
// and an event emitted during RecoverTask could be missed), and buffers
// them.
func subscribeInProcess(t *testing.T, h *dtestutil.DriverHarness) *events {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := h.Impl().TaskEvents(ctx)
	must.NoError(t, err)
	// Drained at once: the eventer waits at most 2s for a reader, and
	// RecoverTask emits while the test is still waiting for it to return.
	buf := make(chan *drivers.TaskEvent, 64)
	go func() {
		for ev := range ch {
			buf <- ev
		}
	}()
	return &events{ch: buf}
}

// verified says whether the recovered handle trusts its pid.
func verified(t *testing.T, h *dtestutil.DriverHarness, taskID string) bool {
	th, ok := h.Impl().(*Driver).tasks.get(taskID)
	must.True(t, ok)
	return th.guard.check() == nil
}

// recycle starts a bystander, a sleep leading its own session, under pid,
// which the test has just freed. A single-threaded shell sets ns_last_pid
// to pid-1 and forks (the Go runtime could take the pid for a thread);
// other processes of this busy machine may take it first, so it retries.
func recycle(t *testing.T, pid int) *bystander {
	t.Helper()
	script := fmt.Sprintf("echo %d > /proc/sys/kernel/ns_last_pid; setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!", pid-1)
	for attempt := 0; attempt < 200; attempt++ {
		out, err := exec.Command("/bin/sh", "-c", script).Output()
		must.NoError(t, err)
		got, err := strconv.Atoi(strings.TrimSpace(string(out)))
		must.NoError(t, err)
		if got != pid {
			_ = syscall.Kill(got, syscall.SIGKILL)
			continue
		}
		b := &bystander{pid: pid}
		b.id, err = readProcIdentity(defaultProcRoot, pid)
		must.NoError(t, err)
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		must.NoError(t, err)
		b.cgroup = string(cg)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		return b
	}
	t.Fatalf("could not start a process under the freed pid %d", pid)
	return nil
}

// waitGone waits until no process holds pid (the executor reaped it).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	g := pidGuard{procRoot: defaultProcRoot, pid: pid}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for g.occupied() {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still exists 10s after SIGKILL", pid)
		}
		<-tick.C
	}
}

// collect gathers events until one starts with prefix and returns all.
func (e *events) collect(t *testing.T, prefix string) []string {
	t.Helper()
	var seen []string
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-e.ch:
			seen = append(seen, ev.Message)
			if strings.HasPrefix(ev.Message, prefix) {
				return seen
			}
		case <-deadline:
			t.Fatalf("no event %q within 20s; saw %q", prefix, seen)
		}
	}
}

// TestAudit28_RecoverTaskVerifiesThePid: RecoverTask moves the recorded
// pid into cgroups and signals its group only while it is still the task
// (audit #28); otherwise the pid is left alone and stops still work
// through the executor.
func TestAudit28_RecoverTaskVerifiesThePid(t *testing.T) {
	needRoot(t)
	t.Run("verified pid is limited again and stops with a checkpoint", func(t *testing.T) {
		root := t.TempDir()
		first := harness(t, root)
		task := limitedTrapTask(t, first)
		handle := start(t, first, task)
		pid := recordedPid(t, handle)
		waitFile(t, filepath.Join(root, "default", "train", "web", "0", "train", "env-"+task.AllocID+".txt"))

		second, lim := recoveringHarness(t, root)
		ev := subscribeInProcess(t, second)
		must.NoError(t, second.RecoverTask(handle))
		must.True(t, verified(t, second, task.ID))
		must.Eq(t, []int{pid}, lim.applied())
		must.NoError(t, second.StopTask(task.ID, 10*time.Second, "SIGINT"))
		for _, msg := range ev.collect(t, "Checkpoint saved") {
			must.StrNotContains(t, msg, MsgPidNotVerified)
		}
		must.NoError(t, second.DestroyTask(task.ID, true))
	})

	t.Run("recycled pid: the task died while the client was down", func(t *testing.T) {
		root := t.TempDir()
		first := harness(t, root)
		// No children: an orphan still in the task's process group would
		// keep its pid from being reused.
		task := limited(shellTask("exec sleep 300")).build(t, first)
		handle := start(t, first, task)
		pid := recordedPid(t, handle)
		must.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		waitGone(t, pid)
		other := recycle(t, pid)

		second, lim := recoveringHarness(t, root)
		ev := subscribeInProcess(t, second)
		must.NoError(t, second.RecoverTask(handle))
		must.False(t, verified(t, second, task.ID))
		// The client waits for the task, which releases the held events.
		res := waitExit(t, second, task.ID)
		must.Eq(t, 9, res.Signal, must.Sprintf("the executor's record of the task's exit: %+v", res))
		seen := ev.collect(t, MsgPidNotVerified)
		must.StrContains(t, seen[len(seen)-1], fmt.Sprintf("pid %d started at tick", pid))
		must.NoError(t, second.StopTask(task.ID, 2*time.Second, "SIGINT"))
		must.NoError(t, second.DestroyTask(task.ID, true))
		must.NoError(t, first.Impl().DestroyTask(task.ID, true))
		must.SliceEmpty(t, lim.applied())
		other.untouched(t)
	})

	forged := map[string]func(st *TaskState, other *bystander){
		"state naming another live process": func(st *TaskState, other *bystander) { st.Pid = other.pid },
		"state of an older driver (no start time recorded)": func(st *TaskState, _ *bystander) {
			st.PidStartTicks, st.PidBootID, st.CheckpointUID = 0, "", nil
		},
	}
	for name, edit := range forged {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			first := harness(t, root)
			task := limitedTrapTask(t, first)
			handle := start(t, first, task)
			waitFile(t, filepath.Join(root, "default", "train", "web", "0", "train", "env-"+task.AllocID+".txt"))
			var st TaskState
			must.NoError(t, handle.GetDriverState(&st))
			other := startBystander(t, st.PidStartTicks)
			handle = editState(t, handle, func(st *TaskState) { edit(st, other) })

			second, lim := recoveringHarness(t, root)
			ev := subscribeInProcess(t, second)
			must.NoError(t, second.RecoverTask(handle))
			must.False(t, verified(t, second, task.ID))
			waitCtx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err := second.WaitTask(waitCtx, task.ID) // as the client does; releases the held events
			must.NoError(t, err)
			ev.collect(t, MsgPidNotVerified)
			must.SliceEmpty(t, lim.applied())
			// The stop still asks the task to checkpoint, through the executor.
			must.NoError(t, second.StopTask(task.ID, 10*time.Second, "SIGINT"))
			must.Eq(t, "42", ev.next(t, "Checkpoint saved").Annotations[AnnStep])
			must.NoError(t, second.DestroyTask(task.ID, true))
			other.untouched(t)
		})
	}
}

// recordedPid is the pid a handle's state records.
func recordedPid(t *testing.T, handle *drivers.TaskHandle) int {
	t.Helper()
	var st TaskState
	must.NoError(t, handle.GetDriverState(&st))
	if st.PidStartTicks == 0 {
		t.Fatal(errors.New("StartTask recorded no start time for the task's pid"))
	}
	return st.Pid
}

// TestHeldEventsReleasedOnWait: events of RecoverTask wait for the
// client (Nomad 1.6 drops driver events sent while it restores an
// allocation), then go out in order; later events pass straight through.
func TestHeldEventsReleasedOnWait(t *testing.T) {
	var out []string
	e := &heldEvents{emit: func(ev event) { out = append(out, ev.msg) }}
	e.send(event{msg: "one"})
	e.send(event{msg: "two"})
	must.SliceEmpty(t, out)
	e.release()
	must.Eq(t, []string{"one", "two"}, out)
	e.send(event{msg: "three"})
	e.release()
	must.Eq(t, []string{"one", "two", "three"}, out)
	var none *heldEvents
	none.release() // a started task has nothing held
}
