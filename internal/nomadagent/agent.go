package nomadagent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/nomad/api"
)

// ErrPortInUse means the agent exited because one of its ports was taken.
var ErrPortInUse = errors.New("agent port already in use")

// StartAttempts is how often an agent is started on new ports when one
// was taken between FreePorts and its bind.
const StartAttempts = 5

// PortInUse reports whether an agent's log says it exited because one
// of its ports was taken (Nomad's and Consul's wording alike).
func PortInUse(log string) bool { return strings.Contains(log, "address already in use") }

// ErrExited means the agent process exited while it was expected to run.
var ErrExited = errors.New("agent exited")

// Agent is one Nomad agent process (server, client, or both) whose config,
// data dir and log live in its own directory.
type Agent struct {
	bin string
	dir string
	cfg Config

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	logFile *os.File
}

// New prepares an agent that runs binary bin with cfg. dir holds the
// rendered config and the agent's log; cfg.DataDir defaults to dir/data.
func New(bin, dir string, cfg Config) (*Agent, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = filepath.Join(dir, "data")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating data dir: %w", err)
	}
	if cfg.CgroupParent != "" {
		if err := os.WriteFile(filepath.Join(dir, cgroupFile), []byte(cfg.CgroupParent), 0o644); err != nil {
			return nil, fmt.Errorf("recording cgroup parent: %w", err)
		}
	}
	return &Agent{bin: bin, dir: dir, cfg: cfg}, nil
}

// Config returns the agent's current config (ports may change on Start).
func (a *Agent) Config() Config { return a.cfg }

// Name is the agent's (and its node's) name.
func (a *Agent) Name() string { return a.cfg.Name }

// Dir is the directory holding the agent's config, data and log.
func (a *Agent) Dir() string { return a.dir }

// LogPath is the file the agent's stdout and stderr go to, across restarts.
func (a *Agent) LogPath() string { return filepath.Join(a.dir, "agent.log") }

// ConfigPath is the rendered agent config file.
func (a *Agent) ConfigPath() string { return filepath.Join(a.dir, "agent.hcl") }

// API returns a Nomad API client for this agent's HTTP address.
func (a *Agent) API() (*api.Client, error) {
	return api.NewClient(&api.Config{Address: a.cfg.HTTPAddr()})
}

// Running reports whether the agent process is alive.
func (a *Agent) Running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done == nil {
		return false
	}
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// Start launches the agent and waits until its HTTP API answers. When the
// agent fails because a port is taken and repick is true, Start picks new
// ports and tries again (only safe before anyone depends on the ports).
func (a *Agent) Start(ctx context.Context, repick bool) error {
	for attempt := 1; ; attempt++ {
		err := a.startOnce(ctx)
		if err == nil || !errors.Is(err, ErrPortInUse) || !repick || attempt >= StartAttempts {
			return err
		}
		ports, perr := NewPorts()
		if perr != nil {
			return perr
		}
		a.cfg.Ports = ports
	}
}

func (a *Agent) startOnce(ctx context.Context) error {
	if a.Running() {
		return fmt.Errorf("agent %s is already running", a.cfg.Name)
	}
	if err := os.WriteFile(a.ConfigPath(), []byte(a.cfg.Render()), 0o644); err != nil {
		return fmt.Errorf("writing agent config: %w", err)
	}
	logFile, err := os.OpenFile(a.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening agent log: %w", err)
	}
	fmt.Fprintf(logFile, "==> allot: starting agent %s at %s with %s\n", a.cfg.Name, time.Now().Format(time.RFC3339), a.ConfigPath())
	offset, _ := logFile.Seek(0, 2)
	cmd := exec.Command(a.bin, "agent", "-config", a.ConfigPath())
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = a.dir
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", a.bin, err)
	}
	done := make(chan struct{})
	a.mu.Lock()
	a.cmd, a.done, a.logFile, a.waitErr = cmd, done, logFile, nil
	a.mu.Unlock()
	go func() {
		err := cmd.Wait()
		a.mu.Lock()
		a.waitErr = err
		a.mu.Unlock()
		logFile.Close()
		close(done)
	}()
	return a.waitHTTP(ctx, done, offset)
}

// waitHTTP polls the agent's HTTP API until it answers, the process exits,
// or ctx ends.
func (a *Agent) waitHTTP(ctx context.Context, done chan struct{}, logOffset int64) error {
	client := &http.Client{Timeout: time.Second}
	url := a.cfg.HTTPAddr() + "/v1/agent/self"
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return a.exitError(logOffset)
		case <-ctx.Done():
			_ = a.Stop(5 * time.Second)
			return fmt.Errorf("agent %s: HTTP API not up: %w", a.cfg.Name, ctx.Err())
		case <-tick.C:
			resp, err := client.Get(url)
			if err == nil {
				resp.Body.Close()
				// 403: the API is up, with ACLs on (the probe has no token).
				if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusForbidden {
					return nil
				}
			}
		}
	}
}

func (a *Agent) exitError(logOffset int64) error {
	tail := a.logSince(logOffset)
	if PortInUse(tail) {
		return fmt.Errorf("agent %s: %w", a.cfg.Name, ErrPortInUse)
	}
	return fmt.Errorf("agent %s: %w during start-up: %v\n%s", a.cfg.Name, ErrExited, a.waitErr, lastLines(tail, 30))
}

func (a *Agent) logSince(offset int64) string {
	data, err := os.ReadFile(a.LogPath())
	if err != nil || int64(len(data)) < offset {
		return ""
	}
	return string(data[offset:])
}

// Stop interrupts the agent (a graceful shutdown that leaves client tasks
// running, as a real agent restart does) and kills it after timeout.
func (a *Agent) Stop(timeout time.Duration) error {
	a.mu.Lock()
	cmd, done := a.cmd, a.done
	a.mu.Unlock()
	if cmd == nil || done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
	}
	_ = cmd.Process.Kill()
	<-done
	return fmt.Errorf("agent %s did not stop within %s and was killed", a.cfg.Name, timeout)
}

// Kill stops the agent at once with SIGKILL, as a crash would.
func (a *Agent) Kill() {
	a.mu.Lock()
	cmd, done := a.cmd, a.done
	a.mu.Unlock()
	if cmd == nil || done == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// PID is the current agent process's ID, 0 when it never started.
func (a *Agent) PID() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil || a.cmd.Process == nil {
		return 0
	}
	return a.cmd.Process.Pid
}

// Exited returns a channel closed when the current agent process exits; nil
// when it never started.
func (a *Agent) Exited() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.done
}

// ReadLog returns the agent's whole log.
func (a *Agent) ReadLog() string {
	data, _ := os.ReadFile(a.LogPath())
	return string(data)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
