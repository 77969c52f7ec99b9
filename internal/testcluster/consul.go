package testcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/allot-sh/allot/internal/nomadagent"
	"github.com/allot-sh/allot/internal/proc"
)

// Consul is a Consul v1.15.4 dev agent (server and client in one, state in
// memory) on 127.0.0.1 with free ports, for tests of the governor's leader
// election. It stops when the test ends and prints its log when the test
// failed.
type Consul struct {
	// LogPath is where the agent's output goes.
	LogPath string

	t        testing.TB
	dir      string
	httpPort int
	p        *proc.Process
}

// ConsulBinary returns the Consul agent to run: $CONSUL_BINARY when set,
// else bin/consul in the repository (built by `make bin/consul`).
func ConsulBinary() (string, error) { return repoBinary("CONSUL_BINARY", "consul", "make build") }

// consulConfig is the dev agent's config: loopback only, no update check,
// every port free and chosen here, no WAN, no gRPC TLS, DNS on loopback
// with no recursors.
const consulConfig = `
node_name            = "allot-test"
datacenter           = "dc1"
bind_addr            = "127.0.0.1"
client_addr          = "127.0.0.1"
advertise_addr       = "127.0.0.1"
disable_update_check = true
disable_host_node_id = true
log_level            = "DEBUG"
ports {
  http     = %d
  dns      = %d
  serf_lan = %d
  server   = %d
  grpc     = %d
  serf_wan = -1
  grpc_tls = -1
  https    = -1
}
`

// StartConsul starts a dev agent and waits until it has elected itself
// leader (a minute at most); it fails the test when it cannot. A port
// another process took between FreePorts and the agent's bind (parallel
// test binaries) is retried with new ports, as nomadagent.Start does.
func StartConsul(t testing.TB) *Consul {
	t.Helper()
	bin, err := ConsulBinary()
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	for attempt := 1; ; attempt++ {
		c, err := startConsul(t, bin)
		if err == nil {
			return c
		}
		if !errors.Is(err, nomadagent.ErrPortInUse) || attempt == nomadagent.StartAttempts {
			t.Fatalf("testcluster: consul dev agent: %v", err)
		}
		t.Logf("testcluster: consul dev agent, attempt %d: %v; retrying with new ports", attempt, err)
	}
}

// startConsul starts one agent on fresh ports and waits for its leader;
// nomadagent.ErrPortInUse when the agent exited because a port was taken.
func startConsul(t testing.TB, bin string) (*Consul, error) {
	ports, err := nomadagent.FreePorts(5)
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	c := &Consul{LogPath: filepath.Join(dir, "consul.log"), t: t, dir: dir, httpPort: ports[0]}
	cfg := filepath.Join(dir, "agent.hcl")
	body := fmt.Sprintf(consulConfig, ports[0], ports[1], ports[2], ports[3], ports[4])
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return nil, fmt.Errorf("writing consul config: %w", err)
	}
	c.p, err = proc.Start(bin, []string{"agent", "-dev", "-config-file", cfg}, nil, c.LogPath)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.waitLeader(ctx); err != nil {
		log := readFile(c.LogPath)
		if stopErr := c.p.Stop(10 * time.Second); stopErr != nil {
			t.Logf("testcluster: %v", stopErr)
		}
		if nomadagent.PortInUse(log) {
			return nil, fmt.Errorf("%w (%v)", nomadagent.ErrPortInUse, err)
		}
		return nil, fmt.Errorf("%v; log:\n%s", err, tail(log, 60))
	}
	t.Cleanup(c.cleanup)
	return c, nil
}

// Addr is the agent's HTTP address as host:port (consul/api's Address).
func (c *Consul) Addr() string { return fmt.Sprintf("127.0.0.1:%d", c.httpPort) }

// URL is the agent's HTTP base URL.
func (c *Consul) URL() string { return "http://" + c.Addr() }

// PID is the agent's process ID.
func (c *Consul) PID() int { return c.p.PID() }

// Stop stops the agent (SIGTERM, then SIGKILL after 10 s); the test's
// cleanup does it too.
func (c *Consul) Stop() {
	c.t.Helper()
	if err := c.p.Stop(10 * time.Second); err != nil {
		c.t.Logf("testcluster: %v", err)
	}
}

// waitLeader polls /v1/status/leader until it names a leader, failing
// early when the agent exits.
func (c *Consul) waitLeader(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return c.p.Poll(ctx, "a leader", pollInterval, func() error { return leaderOf(client, c.URL()) })
}

// leaderOf returns nil when the agent at url reports a leader.
func leaderOf(client *http.Client, url string) error {
	resp, err := client.Get(url + "/v1/status/leader")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /v1/status/leader: %s", resp.Status)
	}
	var leader string
	if err := json.NewDecoder(resp.Body).Decode(&leader); err != nil {
		return fmt.Errorf("decoding /v1/status/leader: %w", err)
	}
	if leader == "" {
		return errors.New("no leader yet")
	}
	return nil
}

func (c *Consul) cleanup() {
	if c.t.Failed() {
		c.t.Logf("==== consul log (%s), last 100 lines ====\n%s", c.LogPath, tail(readFile(c.LogPath), 100))
	}
	if err := c.p.Stop(10 * time.Second); err != nil {
		c.t.Logf("testcluster: %v", err)
	}
}
