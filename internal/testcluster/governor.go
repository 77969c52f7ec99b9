package testcluster

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/allot-sh/allot/internal/proc"
)

// Governor is an allot-governor process, built from ./governor, running
// next to a cluster on a free loopback port.
type Governor struct {
	// Addr is the governor's base URL (for NOMAD_ADDR).
	Addr string
	// LogPath is where its output goes.
	LogPath string

	t    testing.TB
	bin  string
	args []string
	p    *proc.Process
}

// StartGovernor builds allot-governor, starts it against the cluster with
// the extra args, and waits until /readyz says it is synced. It is
// killed when the test ends.
func (c *Cluster) StartGovernor(args ...string) *Governor {
	c.t.Helper()
	return c.StartGovernorWith(GovernorOptions{Args: args})
}

// Start starts the (stopped) governor again on the same port and waits
// until it is healthy.
func (g *Governor) Start() {
	g.t.Helper()
	g.StartNoWait()
	g.WaitHealthy(time.Minute)
}

// WaitHealthy polls /readyz until it answers 200; it fails at once when
// the governor exits.
func (g *Governor) WaitHealthy(timeout time.Duration) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := g.p.WaitHTTP(ctx, g.Addr+"/readyz"); err != nil {
		g.t.Fatalf("testcluster: governor not healthy: %v; log:\n%s", err, tail(readFile(g.LogPath), 40))
	}
}

// PID is the running governor's process ID.
func (g *Governor) PID() int { return g.p.PID() }

// Kill kills the governor with SIGKILL (no cleanup on its side) and waits
// until it is gone.
func (g *Governor) Kill() {
	g.t.Helper()
	if g.p != nil {
		g.p.Kill()
	}
}

func (g *Governor) cleanup() {
	if g.t.Failed() {
		g.t.Logf("==== allot-governor log (%s), last 150 lines ====\n%s", g.LogPath, tail(readFile(g.LogPath), 150))
	}
	if g.p != nil {
		if err := g.p.Stop(10 * time.Second); err != nil {
			g.t.Logf("testcluster: %v", err)
		}
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
