package ckpt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/nomad/drivers/shared/executor"
	"github.com/hashicorp/nomad/plugins/drivers"
)

// isolated says whether tasks run in Nomad's isolating executor.
func (s settings) isolated() bool { return s.isolation == IsolationChroot }

// capabilitiesFor reports the driver's capabilities under the plugin
// config: with isolation the client builds a chroot for each task (its
// chroot_env) and volume mounts are passed to the executor.
func capabilitiesFor(s settings) *drivers.Capabilities {
	c := *capabilities
	if s.isolated() {
		c.FSIsolation = drivers.FSIsolationChroot
		c.MountConfigs = drivers.MountConfigSupportAll
	}
	return &c
}

// isolationUnsupported says why a host (its OS, the plugin's euid) cannot
// run isolated tasks; it is empty when it can. Nomad's isolating executor
// needs Linux and root.
func isolationUnsupported(goos string, euid int) string {
	switch {
	case goos != "linux":
		return "isolation = \"chroot\" needs Linux, this is " + goos
	case euid != 0:
		return "isolation = \"chroot\" needs the plugin to run as root"
	}
	return ""
}

// execCommand is what the executor runs for a task, as username.
//
// Isolated: the task's chroot (built by the client from its chroot_env),
// private PID and IPC namespaces, the reserved devices as the only device
// nodes and device cgroup rules beyond the executor's defaults (null,
// zero, tty, …), the task's volume mounts and its checkpoint directory
// bind-mounted at the same path, no Linux capabilities for a non-root
// user, and the memory and CPU limits applied by the executor's own
// cgroups.
//
// Not isolated: the universal executor, like raw_exec; limits are applied
// by the driver (enforce.go).
func (d *Driver) execCommand(cfg *drivers.TaskConfig, tc *TaskConfig, username, dir string) *executor.ExecCommand {
	cmd := &executor.ExecCommand{
		Cmd: tc.Command, Args: tc.Args, Env: cfg.EnvList(), User: username,
		Resources: cfg.Resources, TaskDir: cfg.TaskDir().Dir,
		StdoutPath: cfg.StdoutPath, StderrPath: cfg.StderrPath,
		NetworkIsolation: cfg.NetworkIsolation,
	}
	if !d.settings.isolated() {
		// Cgroups need root on Linux; elsewhere the executor would fail.
		cgroups := !d.settings.noCgroups && runtime.GOOS == "linux" && os.Geteuid() == 0
		cmd.ResourceLimits, cmd.BasicProcessCgroup = cgroups, cgroups
		if isSelf(username) {
			// No switch needed, and a plugin that is not root could
			// not make one (setgroups needs CAP_SETGID).
			cmd.User = ""
		}
		return cmd
	}
	cmd.ResourceLimits = true
	cmd.Devices = cfg.Devices
	cmd.Mounts = append(append([]*drivers.MountConfig(nil), cfg.Mounts...),
		&drivers.MountConfig{TaskPath: dir, HostPath: dir})
	cmd.ModePID, cmd.ModeIPC = executor.IsolationModePrivate, executor.IsolationModePrivate
	// An empty set: Nomad's exec driver would give a non-root task
	// Docker's default capabilities (SETUID, DAC_OVERRIDE, CHOWN, …) as
	// ambient ones, which make it root in all but name.
	cmd.Capabilities = nil
	return cmd
}

// ErrExecTimeout is returned when a command run with ExecTask outlives its
// timeout.
var ErrExecTimeout = errors.New("exec: command timed out")

// execAsTaskUser runs a command in an isolated task as the task's user.
// The isolating executor's own Exec runs commands as root inside the
// chroot, whose files are hard links to the host's: a root process there
// could rewrite the host's /etc. Its streaming exec keeps the task's user.
func execAsTaskUser(ctx context.Context, exec executor.Executor, cmd []string, timeout time.Duration) (*drivers.ExecTaskResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s := &captureStream{ctx: ctx}
	if err := exec.ExecStreaming(ctx, cmd, false, s); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w after %s: %v", ErrExecTimeout, timeout, err)
		}
		return nil, err
	}
	return s.result(), nil
}

// captureStream is a drivers.ExecTaskStream with no input that collects
// output and the exit result.
type captureStream struct {
	ctx context.Context

	mu     sync.Mutex
	out    bytes.Buffer
	exit   *drivers.ExitResult
	exited bool
}

// Send implements drivers.ExecTaskStream.
func (s *captureStream) Send(m *drivers.ExecTaskStreamingResponseMsg) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.Stdout != nil {
		s.out.Write(m.Stdout.Data)
	}
	if m.Stderr != nil {
		s.out.Write(m.Stderr.Data)
	}
	if m.Exited {
		s.exited = true
		if m.Result != nil {
			s.exit = &drivers.ExitResult{ExitCode: int(m.Result.ExitCode), Signal: int(m.Result.Signal)}
		}
	}
	return nil
}

// Recv implements drivers.ExecTaskStream: there is no input, so it blocks
// until the command is done rather than closing stdin early.
func (s *captureStream) Recv() (*drivers.ExecTaskStreamingRequestMsg, error) {
	<-s.ctx.Done()
	return nil, io.EOF
}

func (s *captureStream) result() *drivers.ExecTaskResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	exit := s.exit
	if exit == nil {
		exit = &drivers.ExitResult{ExitCode: -1, Err: errors.New("exec: no exit result")}
	}
	return &drivers.ExecTaskResult{Stdout: s.out.Bytes(), ExitResult: exit}
}

// isolationOf is the isolation mode a task runs in, as persisted.
func isolationOf(h *taskHandle) string {
	if h.isolated {
		return IsolationChroot
	}
	return IsolationNone
}

// isSelf says whether username is the user the plugin runs as.
func isSelf(username string) bool {
	uid, err := hostUID(username)
	return err == nil && uid == os.Geteuid()
}
