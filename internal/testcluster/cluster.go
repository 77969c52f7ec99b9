// Package testcluster starts a real Nomad v1.6.1 cluster (one server and
// several clients on 127.0.0.1) for Allot's end-to-end tests, with the
// project's freshly built plugins in every client's plugin_dir.
package testcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/internal/nomadagent"
)

// rootPrefix names the temp dirs of clusters; ReapStale uses it to clean up
// after test binaries that were killed before their cleanup ran.
const rootPrefix = "allot-tc-"

// Options describe a cluster.
type Options struct {
	// Clients describes each client agent; at least one is required.
	Clients []ClientSpec
	// Plugins names the project plugin binaries (see PluginPackages) to
	// build into the plugin_dir every client loads.
	Plugins []string
	// StartTimeout bounds start-up: leader election and every client ready.
	// Default 2 minutes.
	StartTimeout time.Duration
	// ACL starts every agent with acl { enabled = true } and bootstraps a
	// management token, which API carries (see acl.go).
	ACL bool
	// ServerExtra is appended to the server agent's config (for example a
	// consul or vault block; agent-safety settings stay as they are).
	ServerExtra string
}

// ClientSpec describes one client agent.
type ClientSpec struct {
	// Name is the agent and node name; default "client-<i>".
	Name       string
	NodePool   string
	NodeClass  string
	Datacenter string
	Meta       map[string]string
	// PluginConfig maps a plugin name to the HCL body of its config block,
	// e.g. {"nomad-device-accel": `inventory_file = "/path"`}.
	PluginConfig map[string]string
	// ChrootEnv is the client's chroot_env (host path → chroot path) for
	// isolating drivers; empty means Nomad's default, which links all of
	// /usr into every task's chroot.
	ChrootEnv map[string]string
	// Ready is an extra readiness check on the client's node, e.g. that its
	// devices are fingerprinted. It is polled until it returns nil.
	Ready func(*api.Node) error
}

// Cluster is a running Nomad cluster. Its agents stop and its files go away
// when the test ends.
type Cluster struct {
	// API is a client for the server's HTTP API.
	API *api.Client
	// Server is the server agent.
	Server *nomadagent.Agent
	// Clients are the client agents, in the order of Options.Clients.
	Clients []*Client
	// Dir is the cluster's root directory (configs, data, logs, plugins).
	Dir string

	t       testing.TB
	pluginD string
	aclOn   bool
	// serverExtra is Options.ServerExtra.
	serverExtra string
	mgmt        *api.ACLToken
}

// Client is one client agent with the node it registered.
type Client struct {
	*nomadagent.Agent
	Spec ClientSpec
	// NodeID is the node's ID, stable across restarts.
	NodeID string
}

// New starts a cluster and registers its teardown with t.Cleanup. It fails
// the test when the cluster cannot start.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if len(opts.Clients) == 0 {
		t.Fatalf("testcluster: at least one client is required")
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	nomadagent.ReapStale(rootPrefix)
	nomadBin, err := NomadBinary()
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	dir, err := nomadagent.NewRoot(rootPrefix)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	c := &Cluster{t: t, Dir: dir, pluginD: filepath.Join(dir, "plugins"), aclOn: opts.ACL, serverExtra: opts.ServerExtra}
	t.Cleanup(c.teardown)
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	if err := c.start(ctx, nomadBin, opts); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return c
}

func (c *Cluster) start(ctx context.Context, nomadBin string, opts Options) error {
	if err := buildPlugins(c.pluginD, opts.Plugins); err != nil {
		return err
	}
	if err := c.startServer(ctx, nomadBin); err != nil {
		return err
	}
	if err := c.bootstrapACL(ctx); err != nil {
		return err
	}
	for i, spec := range opts.Clients {
		if spec.Name == "" {
			spec.Name = fmt.Sprintf("client-%d", i)
		}
		if err := c.startClient(ctx, nomadBin, spec); err != nil {
			return err
		}
	}
	for _, cl := range c.Clients {
		if err := c.waitClientReady(ctx, cl); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) startServer(ctx context.Context, nomadBin string) error {
	ports, err := nomadagent.NewPorts()
	if err != nil {
		return err
	}
	dir := filepath.Join(c.Dir, "server")
	agent, err := nomadagent.New(nomadBin, dir, nomadagent.Config{Name: "server", Server: true, Ports: ports,
		Extra: c.agentExtra() + c.serverExtra})
	if err != nil {
		return err
	}
	c.Server = agent
	if err := agent.Start(ctx, true); err != nil {
		return err
	}
	if c.API, err = agent.API(); err != nil {
		return err
	}
	return nomadagent.WaitLeader(ctx, c.API)
}

func (c *Cluster) startClient(ctx context.Context, nomadBin string, spec ClientSpec) error {
	ports, err := nomadagent.NewPorts()
	if err != nil {
		return err
	}
	dir := filepath.Join(c.Dir, spec.Name)
	agent, err := nomadagent.New(nomadBin, dir, nomadagent.Config{
		Name:           spec.Name,
		Client:         true,
		Servers:        []string{c.Server.Config().RPCAddr()},
		Ports:          ports,
		Datacenter:     spec.Datacenter,
		NodePool:       spec.NodePool,
		NodeClass:      spec.NodeClass,
		Meta:           spec.Meta,
		PluginDir:      c.pluginD,
		MaxKillTimeout: "10m",
		CgroupParent:   nomadagent.CgroupParent(filepath.Base(c.Dir) + "-" + spec.Name),
		RawExec:        true,
		Plugins:        spec.PluginConfig,
		ChrootEnv:      spec.ChrootEnv,
		Extra:          c.agentExtra(),
	})
	if err != nil {
		return err
	}
	cl := &Client{Agent: agent, Spec: spec}
	c.Clients = append(c.Clients, cl)
	return agent.Start(ctx, true)
}

// Client returns the client agent with the given name, failing the test
// when there is none.
func (c *Cluster) Client(name string) *Client {
	c.t.Helper()
	for _, cl := range c.Clients {
		if cl.Name() == name {
			return cl
		}
	}
	c.t.Fatalf("testcluster: no client named %q", name)
	return nil
}

// Addr is the server's HTTP address, for NOMAD_ADDR.
func (c *Cluster) Addr() string { return c.Server.Config().HTTPAddr() }

// agents lists every agent, clients first (they stop first).
func (c *Cluster) agents() []*nomadagent.Agent {
	var all []*nomadagent.Agent
	for _, cl := range c.Clients {
		all = append(all, cl.Agent)
	}
	if c.Server != nil {
		all = append(all, c.Server)
	}
	return all
}

// teardown stops every job, then every agent, sweeps what they leave
// behind and deletes the cluster dir. Logs are printed when the test failed.
func (c *Cluster) teardown() {
	if c.t.Failed() {
		c.dumpLogs()
	}
	if c.API != nil && c.Server.Running() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := nomadagent.StopAllJobs(ctx, c.API); err != nil {
			c.t.Logf("testcluster: jobs did not all stop before teardown: %v", err)
		}
		cancel()
	}
	for _, a := range c.agents() {
		if err := a.Stop(20 * time.Second); err != nil {
			c.t.Logf("testcluster: %v", err)
		}
	}
	if err := nomadagent.RemoveRoot(c.Dir, nomadagent.CgroupParentsIn(c.Dir)...); err != nil {
		c.t.Errorf("testcluster: cleanup: %v", err)
	}
}

// dumpLogs prints the tail of every agent's log, and copies the whole logs
// to $ALLOT_E2E_LOG_DIR when it is set.
func (c *Cluster) dumpLogs() {
	keep := os.Getenv("ALLOT_E2E_LOG_DIR")
	for _, a := range c.agents() {
		log := a.ReadLog()
		c.t.Logf("==== agent %s log (%s), last 200 lines ====\n%s", a.Name(), a.LogPath(), tail(log, 200))
		if keep != "" {
			name := fmt.Sprintf("%s-%s.log", strings.ReplaceAll(c.t.Name(), "/", "_"), a.Name())
			if err := os.MkdirAll(keep, 0o755); err == nil {
				_ = os.WriteFile(filepath.Join(keep, name), []byte(log), 0o644)
			}
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
