// Package proc supervises one helper process (the governor next to a dev or
// test cluster): output to a log file, its own process group, killed with
// its parent, graceful stop with a deadline, and a readiness poll on HTTP.
package proc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ErrExited means the process exited while it was expected to run.
var ErrExited = errors.New("process exited")

// Process is one started process.
type Process struct {
	// LogPath receives the process's stdout and stderr (appended).
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs bin with args; env is added to the current environment.
func Start(bin string, args, env []string, logPath string) (*Process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", bin, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &Process{LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Stop sends SIGTERM and, after timeout, SIGKILL; it returns once the
// process is gone.
func (p *Process) Stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
	}
	p.Kill()
	return fmt.Errorf("%s did not stop within %s and was killed", p.cmd.Path, timeout)
}

// Kill kills the process at once, as a crash would, and waits for it.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// WaitHTTP polls url until it answers 200, failing early when the process
// exits or ctx ends.
func (p *Process) WaitHTTP(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return p.Poll(ctx, url, 100*time.Millisecond, func() error { return get(client, url) })
}

// Poll calls check every interval until it returns nil. It fails early
// when the process exits (an error wrapping ErrExited that names the
// binary and its log) or when ctx ends (naming what was awaited, with
// check's last error).
func (p *Process) Poll(ctx context.Context, what string, interval time.Duration, check func() error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		last := check()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s: %w (see %s)", p.cmd.Path, ErrExited, p.LogPath)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w: %v", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func get(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
