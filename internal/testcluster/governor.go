package testcluster

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/allot-sh/allot/internal/nomadagent"
)

// Governor is an allot-governor process, built from ./governor, running
// next to a cluster on a free loopback port.
type Governor struct {
	// Addr is the governor's base URL (for NOMAD_ADDR).
	Addr string
	// LogPath is where its output goes.
	LogPath string

	t      testing.TB
	bin    string
	args   []string
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartGovernor builds allot-governor, starts it against the cluster with
// the extra args, and waits until /healthz says it is synced. It is
// killed when the test ends.
func (c *Cluster) StartGovernor(args ...string) *Governor {
	c.t.Helper()
	root, err := RepoRoot()
	if err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	bin := filepath.Join(c.Dir, "allot-governor")
	build := exec.Command("go", "build", "-o", bin, "./governor")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		c.t.Fatalf("testcluster: building allot-governor: %v\n%s", err, out)
	}
	ports, err := nomadagent.FreePorts(1)
	if err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", ports[0])
	g := &Governor{Addr: "http://" + listen, LogPath: filepath.Join(c.Dir, "governor.log"), t: c.t, bin: bin,
		args: append([]string{"-nomad-addr", c.Addr(), "-listen", listen, "-log-level", "debug"}, args...)}
	c.t.Cleanup(g.cleanup)
	g.Start()
	return g
}

// Start starts the (stopped) governor again on the same port and waits
// until it is healthy.
func (g *Governor) Start() {
	g.t.Helper()
	logf, err := os.OpenFile(g.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		g.t.Fatalf("testcluster: governor log: %v", err)
	}
	g.cmd = exec.Command(g.bin, g.args...)
	g.cmd.Stdout, g.cmd.Stderr = logf, logf
	g.cmd.Env = append(os.Environ(), "NOMAD_ADDR=", "NOMAD_TOKEN=")
	if err := g.cmd.Start(); err != nil {
		logf.Close()
		g.t.Fatalf("testcluster: starting governor: %v", err)
	}
	g.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}(g.cmd, g.exited)
	g.WaitHealthy(time.Minute)
}

// WaitHealthy polls /healthz until it answers 200; it fails at once when
// the governor exits.
func (g *Governor) WaitHealthy(timeout time.Duration) {
	g.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last error
	for {
		if last = g.healthy(); last == nil {
			return
		}
		select {
		case <-g.exited:
			g.t.Fatalf("testcluster: governor exited; log:\n%s", tail(readFile(g.LogPath), 40))
		case <-deadline.C:
			g.t.Fatalf("testcluster: governor not healthy within %s: %v", timeout, last)
		case <-tick.C:
		}
	}
}

func (g *Governor) healthy() error {
	resp, err := http.Get(g.Addr + "/healthz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthz: %s", resp.Status)
	}
	return nil
}

// Kill kills the governor with SIGKILL (no cleanup on its side) and waits
// until it is gone.
func (g *Governor) Kill() {
	g.t.Helper()
	if g.cmd == nil || g.cmd.Process == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGKILL)
	<-g.exited
}

func (g *Governor) cleanup() {
	if g.t.Failed() {
		g.t.Logf("==== allot-governor log (%s), last 150 lines ====\n%s", g.LogPath, tail(readFile(g.LogPath), 150))
	}
	if g.cmd != nil && g.exited != nil {
		select {
		case <-g.exited:
		default:
			_ = g.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-g.exited:
			case <-time.After(10 * time.Second):
				_ = g.cmd.Process.Signal(syscall.SIGKILL)
				<-g.exited
			}
		}
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
