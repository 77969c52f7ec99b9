package dev

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/allot-sh/allot/internal/pgtest"
	"github.com/allot-sh/allot/internal/proc"
)

// HA mode (`allotctl dev up -ha`, `make dev HA=1`, docs/ha.md): a Consul
// dev agent, a throwaway PostgreSQL for the shared ledger (when the
// server binaries are installed), and two governors electing a leader.
const (
	// devConsulHTTP is the Consul dev agent's HTTP port; its other ports
	// follow it (serf LAN +1, server +2); DNS, gRPC and WAN are off.
	devConsulHTTP = 8500
	// devGovernors is how many governors HA mode runs.
	devGovernors = 2
)

// haParts are what HA mode runs besides Nomad.
type haParts struct {
	consul    *proc.Process
	pg        *pgtest.Server
	governors []*proc.Process
}

// devConsulConfig keeps the dev agent on loopback with the update check
// off.
const devConsulConfig = `node_name            = "allot-dev"
bind_addr            = "127.0.0.1"
client_addr          = "127.0.0.1"
advertise_addr       = "127.0.0.1"
disable_update_check = true
disable_host_node_id = true
ports {
  http     = %d
  serf_lan = %d
  server   = %d
  dns      = -1
  grpc     = -1
  grpc_tls = -1
  serf_wan = -1
  https    = -1
}
`

// devHAGovernorConfig is one HA governor's config: short timings so a
// failover is quick to watch (docs/ha.md has production values).
const devHAGovernorConfig = `ha {
  consul { address = "http://127.0.0.1:%d" }
  session_ttl = "10s"
  lock_delay  = "3s"
  check_ttl   = "3s"
  member_id   = %q
}
%s`

// devPostgresLedger is the shared ledger block (rates as in single mode).
const devPostgresLedger = `ledger {
  driver          = "postgres"
  dsn             = %q
  currency        = "USD"
  device_rates    = { "nvidia/gpu/H200" = 4.00, "huawei/npu/Ascend910B" = 2.50 }
  cpu_ghz_hour    = 0.02
  memory_gib_hour = 0.005
}
`

// GovernorAddrs are the base URLs of the HA governors (one outside HA
// mode).
func (e *Env) GovernorAddrs() []string {
	if !e.HA {
		return []string{e.GovernorAddr()}
	}
	var out []string
	for i := 0; i < devGovernors; i++ {
		out = append(out, fmt.Sprintf("http://127.0.0.1:%d", e.GovernorPort+i))
	}
	return out
}

// startHA starts Consul, PostgreSQL and the governors of HA mode.
func (e *Env) startHA(ctx context.Context, out io.Writer) error {
	bin := filepath.Join(e.BinDir, "allot-governor")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("HA mode needs %s: run `make build` first: %w", bin, err)
	}
	if err := checkPortsFree(devConsulHTTP, devConsulHTTP+1, devConsulHTTP+2, e.GovernorPort+1); err != nil {
		return err
	}
	if err := e.startConsul(ctx, out); err != nil {
		return err
	}
	ledger, err := e.startPostgres(out)
	if err != nil {
		return err
	}
	if err := e.createTenants(out); err != nil {
		return err
	}
	for i, addr := range e.GovernorAddrs() {
		if err := e.startHAGovernor(ctx, out, i, addr, ledger); err != nil {
			return err
		}
	}
	e.Governor = e.ha.governors[0]
	return nil
}

// startConsul runs a Consul dev agent and waits until it leads itself.
func (e *Env) startConsul(ctx context.Context, out io.Writer) error {
	bin := filepath.Join(e.BinDir, "consul")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("HA mode needs %s (Consul v1.15.4): run `make build` first: %w", bin, err)
	}
	dir := filepath.Join(e.Dir, "consul")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	cfg := filepath.Join(dir, "agent.hcl")
	body := fmt.Sprintf(devConsulConfig, devConsulHTTP, devConsulHTTP+1, devConsulHTTP+2)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return fmt.Errorf("writing the Consul config: %w", err)
	}
	p, err := proc.Start(bin, []string{"agent", "-dev", "-config-file", cfg}, nil, filepath.Join(dir, "consul.log"))
	if err != nil {
		return err
	}
	e.ha.consul = p
	if err := waitConsulLeader(ctx, p, fmt.Sprintf("http://127.0.0.1:%d", devConsulHTTP)); err != nil {
		return err
	}
	fmt.Fprintf(out, "    consul dev agent on 127.0.0.1:%d (log: %s)\n", devConsulHTTP, p.LogPath)
	return nil
}

// waitConsulLeader polls /v1/status/leader until the agent names one.
func waitConsulLeader(ctx context.Context, p *proc.Process, base string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return p.Poll(ctx, "Consul's leader", 200*time.Millisecond, func() error { return consulLeader(client, base) })
}

func consulLeader(client *http.Client, base string) error {
	resp, err := client.Get(base + "/v1/status/leader")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var leader string
	if err := json.NewDecoder(resp.Body).Decode(&leader); err != nil || leader == "" {
		return fmt.Errorf("no leader yet (%s)", resp.Status)
	}
	return nil
}

// startPostgres starts a throwaway PostgreSQL for the shared ledger and
// returns the governors' ledger block; without the server binaries HA
// mode runs without a ledger (HA accepts none) and says so.
func (e *Env) startPostgres(out io.Writer) (string, error) {
	pg, err := pgtest.Start()
	if errors.Is(err, pgtest.ErrNoServer) {
		fmt.Fprintf(out, "    PostgreSQL: %v; the governors run without a ledger\n", err)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("starting PostgreSQL for the shared ledger: %w", err)
	}
	e.ha.pg = pg
	dsn, err := pg.CreateDB("allot")
	if err != nil {
		return "", err
	}
	fmt.Fprintf(out, "    PostgreSQL for the shared ledger on 127.0.0.1:%d\n", pg.Port)
	return fmt.Sprintf(devPostgresLedger, dsn), nil
}

// startHAGovernor starts governor i on addr and waits until it is ready
// (leading, or standing by behind a known leader).
func (e *Env) startHAGovernor(ctx context.Context, out io.Writer, i int, addr, ledger string) error {
	id := fmt.Sprintf("gov-%d", i+1)
	cfg := filepath.Join(e.Dir, id+".hcl")
	body := fmt.Sprintf(devHAGovernorConfig, devConsulHTTP, id, ledger)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", cfg, err)
	}
	args := []string{"-config", cfg, "-nomad-addr", e.Agent.Config().HTTPAddr(),
		"-listen", addr[len("http://"):], "-log-level", "info"}
	p, err := proc.Start(filepath.Join(e.BinDir, "allot-governor"), args,
		[]string{"NOMAD_ADDR=", "NOMAD_TOKEN=", "CONSUL_HTTP_TOKEN="}, filepath.Join(e.Dir, id+".log"))
	if err != nil {
		return err
	}
	e.ha.governors = append(e.ha.governors, p)
	if err := p.WaitHTTP(ctx, addr+"/readyz"); err != nil {
		return fmt.Errorf("starting governor %s: %w", id, err)
	}
	fmt.Fprintf(out, "    governor %s ready on %s (pid %d, log: %s)\n", id, addr, p.PID(), p.LogPath)
	return nil
}

// stopHA stops the governors (each releases the lock on SIGTERM), then
// Consul and PostgreSQL.
func (e *Env) stopHA(out io.Writer) {
	for _, g := range e.ha.governors {
		if err := g.Stop(15 * time.Second); err != nil {
			fmt.Fprintf(out, "    warning: %v\n", err)
		}
	}
	e.ha.governors, e.Governor = nil, nil
	if e.ha.consul != nil {
		fmt.Fprintln(out, "    stopping Consul")
		if err := e.ha.consul.Stop(15 * time.Second); err != nil {
			fmt.Fprintf(out, "    warning: %v\n", err)
		}
		e.ha.consul = nil
	}
	if e.ha.pg != nil {
		fmt.Fprintln(out, "    stopping PostgreSQL")
		e.ha.pg.Stop()
		e.ha.pg = nil
	}
}

// printHA tells how to watch a failover.
func printHA(out io.Writer, e *Env) {
	if !e.HA {
		return
	}
	fmt.Fprintf(out, `    HA mode: governors %v behind no balancer: point NOMAD_ADDR at either.
    %s status                      # leader, term, members
    kill -9 <the leader's pid>     # the other takes over within check_ttl + lock_delay (~6 s)
`, e.GovernorAddrs(), filepath.Join(e.BinDir, "allotctl"))
}
