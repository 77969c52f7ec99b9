package dev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/internal/nomadagent"
	"github.com/allot-sh/allot/internal/proc"
)

// NodeName is the dev node's name.
const NodeName = "dev-1"

// Options configure the dev environment.
type Options struct {
	// Dir holds the agent's config, data, log and plugin dir.
	Dir string
	// BinDir holds bin/nomad and the project's plugin binaries.
	BinDir                      string
	HTTPPort, RPCPort, SerfPort int
	LogLevel                    string
	// GovernorPort is allot-governor's port (proxy, API, metrics).
	GovernorPort int
	// InventoryFile describes the dev node's accelerators for the device
	// plugin's inventory backend.
	InventoryFile string
	// JobspecsDir holds the example jobs' scripts (toy_train.py); an
	// isolated node puts it into every task's chroot at the same path.
	JobspecsDir string
	// StartTimeout bounds start-up; default 2 minutes.
	StartTimeout time.Duration
	// HA runs a Consul dev agent, PostgreSQL and two governors on
	// GovernorPort and GovernorPort+1 (ha.go).
	HA bool
}

// Env is what the running dev environment offers to later steps.
type Env struct {
	Options
	Agent *nomadagent.Agent
	Nomad *api.Client
	// Governor is the running allot-governor, nil when it is not built.
	Governor *proc.Process
	// Plugins are the project plugins the agent loaded.
	Plugins []string
	// iso is how the ckpt driver runs tasks.
	iso isolation
	// ha holds what HA mode runs besides Nomad.
	ha haParts
}

// Up starts the environment, prints how to use it to out, and blocks until
// ctx ends (Ctrl-C); then it stops everything and removes the agent's data.
func Up(ctx context.Context, opts Options, out io.Writer) error {
	env, err := Start(ctx, opts, out)
	if env != nil {
		defer env.Stop(out)
	}
	if err != nil {
		return err
	}
	printNext(out, env)
	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "\n==> Caught interrupt, stopping")
		return nil
	case <-env.Agent.Exited():
		return fmt.Errorf("the Nomad agent exited unexpectedly; see %s", env.Agent.LogPath())
	}
}

// Start brings the environment up and returns it; the caller must Stop it,
// also when Start fails with a non-nil Env.
func Start(ctx context.Context, opts Options, out io.Writer) (*Env, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	nomadBin := filepath.Join(opts.BinDir, "nomad")
	if _, err := os.Stat(nomadBin); err != nil {
		return nil, fmt.Errorf("%s not found: run `make build` first: %w", nomadBin, err)
	}
	if err := checkPortsFree(opts.HTTPPort, opts.RPCPort, opts.SerfPort, opts.GovernorPort); err != nil {
		return nil, err
	}
	if err := resetDir(opts.Dir); err != nil {
		return nil, err
	}
	iso, err := currentIsolation()
	if err != nil {
		return nil, err
	}
	if iso.chroot {
		if opts.InventoryFile, err = deviceInventory(ctx, opts.Dir, opts.InventoryFile); err != nil {
			return nil, err
		}
	}
	plugins, pluginConfig, err := preparePlugins(opts, iso)
	if err != nil {
		return nil, err
	}
	agent, err := nomadagent.New(nomadBin, filepath.Join(opts.Dir, "nomad"), agentConfig(opts, iso, plugins, pluginConfig))
	if err != nil {
		return nil, err
	}
	env := &Env{Options: opts, Agent: agent, Plugins: plugins, iso: iso}
	fmt.Fprintf(out, "==> Starting Nomad v1.6.1 (server + client %q) on 127.0.0.1:%d\n", NodeName, opts.HTTPPort)
	fmt.Fprintf(out, "    plugins: %s\n    log:     %s\n", listOrNone(plugins), agent.LogPath())
	fmt.Fprintln(out, iso.describe())
	if d := traversableByAll(opts.JobspecsDir); iso.chroot && opts.JobspecsDir != "" && d != "" {
		fmt.Fprintf(out, "    warning: %s is closed to other users, so tasks (nobody) cannot read %s\n", d, opts.JobspecsDir)
	}
	startCtx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := env.startNomad(startCtx, out); err != nil {
		return env, err
	}
	if opts.HA {
		return env, env.startHA(startCtx, out)
	}
	return env, env.startGovernor(startCtx, out)
}

func (e *Env) startNomad(ctx context.Context, out io.Writer) error {
	if err := e.Agent.Start(ctx, false); err != nil {
		return err
	}
	client, err := e.Agent.API()
	if err != nil {
		return err
	}
	e.Nomad = client
	if err := nomadagent.WaitLeader(ctx, client); err != nil {
		return err
	}
	fmt.Fprintln(out, "    leader elected")
	node, err := nomadagent.WaitNodeReady(ctx, client, NodeName, e.drivers(), e.devicesFingerprinted)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "    node %s ready (drivers: %s; devices: %s)\n",
		node.Name, strings.Join(e.drivers(), ", "), listOrNone(deviceSummary(node)))
	return nil
}

// devicesFingerprinted holds readiness until the device plugin, when
// loaded, has reported the inventory's devices.
func (e *Env) devicesFingerprinted(node *api.Node) error {
	for _, p := range e.Plugins {
		if p == "nomad-device-accel" && (node.NodeResources == nil || len(node.NodeResources.Devices) == 0) {
			return fmt.Errorf("node %s has no devices fingerprinted yet", node.Name)
		}
	}
	return nil
}

// deviceSummary lists the node's device groups as "8× nvidia/gpu/H200".
func deviceSummary(node *api.Node) []string {
	var out []string
	if node.NodeResources == nil {
		return nil
	}
	for _, d := range node.NodeResources.Devices {
		out = append(out, fmt.Sprintf("%d× %s/%s/%s", len(d.Instances), d.Vendor, d.Type, d.Name))
	}
	sort.Strings(out)
	return out
}

// drivers lists the task drivers the dev node must have healthy.
func (e *Env) drivers() []string {
	drivers := []string{"raw_exec"}
	for _, p := range e.Plugins {
		if d := knownPlugins[p].driver; d != "" {
			drivers = append(drivers, d)
		}
	}
	return drivers
}

// Stop stops every job (so tasks end through Nomad), then the agent, sweeps
// any process or mount left under Dir and removes the agent's data.
func (e *Env) Stop(out io.Writer) {
	if e.HA {
		e.stopHA(out)
	}
	e.stopGovernor(out)
	if e.Nomad != nil && e.Agent.Running() {
		fmt.Fprintln(out, "    stopping jobs")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := nomadagent.StopAllJobs(ctx, e.Nomad); err != nil {
			fmt.Fprintf(out, "    warning: %v\n", err)
		}
		cancel()
	}
	fmt.Fprintln(out, "    stopping the Nomad agent")
	if err := e.Agent.Stop(30 * time.Second); err != nil {
		fmt.Fprintf(out, "    warning: %v\n", err)
	}
	if _, err := nomadagent.Sweep(e.Dir, nomadagent.CgroupParentsIn(e.Dir)...); err != nil {
		fmt.Fprintf(out, "    warning: %v\n", err)
	}
	if err := os.RemoveAll(e.Agent.Config().DataDir); err != nil {
		fmt.Fprintf(out, "    warning: removing data: %v\n", err)
	}
	// The simulated device nodes go too: they are real nodes of
	// NVIDIA's major, open to everyone.
	if err := os.RemoveAll(filepath.Join(e.Dir, deviceNodeDir)); err != nil {
		fmt.Fprintf(out, "    warning: removing device nodes: %v\n", err)
	}
	fmt.Fprintf(out, "==> Stopped; the agent log stays in %s\n", e.Agent.LogPath())
}

func agentConfig(opts Options, iso isolation, plugins []string, pluginConfig map[string]string) nomadagent.Config {
	var chroot map[string]string
	if iso.chroot {
		chroot = chrootEnv(opts.JobspecsDir)
	}
	return nomadagent.Config{
		Name:           NodeName,
		Server:         true,
		Client:         true,
		Ports:          nomadagent.Ports{HTTP: opts.HTTPPort, RPC: opts.RPCPort, Serf: opts.SerfPort},
		LogLevel:       opts.LogLevel,
		PluginDir:      filepath.Join(opts.Dir, "plugins"),
		NodePool:       "default",
		NodeClass:      "dev",
		MaxKillTimeout: "10m",
		CgroupParent:   nomadagent.CgroupParent("allot-dev"),
		RawExec:        true,
		Plugins:        pluginConfig,
		ChrootEnv:      chroot,
	}
}

// resetDir sweeps what an earlier, killed run may have left in dir and
// starts from an empty data dir.
func resetDir(dir string) error {
	if _, err := nomadagent.Sweep(dir, nomadagent.CgroupParentsIn(dir)...); err != nil {
		return err
	}
	for _, sub := range []string{"nomad", "plugins", "checkpoints", deviceNodeDir, "inventory"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return fmt.Errorf("cleaning %s: %w", dir, err)
		}
	}
	return os.MkdirAll(dir, 0o755)
}

func checkPortsFree(ports ...int) error {
	var busy []string
	for _, p := range ports {
		if p <= 0 || p > 65535 {
			return fmt.Errorf("port %d is not a valid port", p)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			busy = append(busy, fmt.Sprint(p))
			continue
		}
		l.Close()
	}
	if len(busy) > 0 {
		return fmt.Errorf("port(s) %s on 127.0.0.1 already in use (another Nomad or `dev up` running?); pick others with -http-port, -rpc-port, -serf-port, -governor-port: %w",
			strings.Join(busy, ", "), errPortBusy)
	}
	return nil
}

var errPortBusy = errors.New("port busy")

func printNext(out io.Writer, e *Env) {
	nomadAddr := e.Agent.Config().HTTPAddr()
	addr, via := nomadAddr, "Nomad directly (the governor is not built)"
	if e.Governor != nil {
		addr, via = e.GovernorAddr(), "the governor: every job goes through admission"
	}
	bin := func(name string) string { return filepath.Join(e.BinDir, name) }
	fmt.Fprintf(out, `
==> Allot dev environment is ready. In another terminal:

    export NOMAD_ADDR=%s   # %s
    %s node status
    %s job run -var namespace=ml-research -var script_dir=$PWD/jobspecs jobspecs/train-gpu.nomad.hcl
    %s tenant list
    %s queue

    Nomad UI: %s/ui    (Nomad itself: %s)

    Press Ctrl-C to stop everything and clean up.
`, addr, via, bin("nomad"), bin("nomad"), bin("allotctl"), bin("allotctl"), nomadAddr, nomadAddr)
	printHA(out, e)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
