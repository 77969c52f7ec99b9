package testcluster

import (
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/allot-sh/allot/internal/nomadagent"
	"github.com/allot-sh/allot/internal/proc"
)

// GovernorOptions start one of several governors beside a cluster (HA
// tests: each has its own name, log, port and way to Nomad).
type GovernorOptions struct {
	// Name names the governor's log, governor-<Name>.log (default
	// "governor.log").
	Name string
	// NomadAddr is the Nomad address it uses (default the cluster's; a
	// test may put a recording proxy in between).
	NomadAddr string
	// Args are extra command-line arguments (e.g. -config).
	Args []string
	// Listen is its listen address (default a free loopback port).
	Listen string
	// NoWait returns without waiting for /readyz.
	NoWait bool
}

// StartGovernorWith builds allot-governor once and starts a governor as o
// says. It is stopped when the test ends.
func (c *Cluster) StartGovernorWith(o GovernorOptions) *Governor {
	c.t.Helper()
	bin := filepath.Join(c.Dir, "allot-governor")
	if err := GoBuild("./governor", bin); err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	if o.Listen == "" {
		ports, err := nomadagent.FreePorts(1)
		if err != nil {
			c.t.Fatalf("testcluster: %v", err)
		}
		o.Listen = fmt.Sprintf("127.0.0.1:%d", ports[0])
	}
	if o.NomadAddr == "" {
		o.NomadAddr = c.Addr()
	}
	log := "governor.log"
	if o.Name != "" {
		log = "governor-" + o.Name + ".log"
	}
	g := &Governor{Addr: "http://" + o.Listen, LogPath: filepath.Join(c.Dir, log), t: c.t, bin: bin,
		args: append([]string{"-nomad-addr", o.NomadAddr, "-listen", o.Listen, "-log-level", "debug"}, o.Args...)}
	c.t.Cleanup(g.cleanup)
	if o.NoWait {
		g.StartNoWait()
	} else {
		g.Start()
	}
	return g
}

// StartNoWait starts the (stopped) governor again without waiting for it.
func (g *Governor) StartNoWait() {
	g.t.Helper()
	p, err := proc.Start(g.bin, g.args, []string{"NOMAD_ADDR=", "NOMAD_TOKEN=", "CONSUL_HTTP_TOKEN="}, g.LogPath)
	if err != nil {
		g.t.Fatalf("testcluster: starting governor: %v", err)
	}
	g.p = p
}

// Signal sends sig to the governor (SIGSTOP, SIGCONT, SIGTERM, …).
func (g *Governor) Signal(sig syscall.Signal) error {
	if g.p == nil {
		return fmt.Errorf("governor not started")
	}
	return syscall.Kill(g.p.PID(), sig)
}

// WaitExit waits until the governor's process has exited.
func (g *Governor) WaitExit(timeout time.Duration) error {
	if g.p == nil {
		return nil
	}
	select {
	case <-g.p.Exited():
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("governor %s still running after %s", g.Addr, timeout)
	}
}

// Log returns the last lines of the governor's log.
func (g *Governor) Log(lines int) string { return tail(readFile(g.LogPath), lines) }
