// Package dev runs Allot's local development environment: a single-node
// Nomad v1.6.1 (server and client on loopback) with the project's plugins,
// until Ctrl-C. `make dev` runs `allotctl dev up`.
package dev

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Command returns the `dev` noun with its `up` verb.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "run a local Allot development environment",
		Subcommands: []*cli.Command{{
			Name:  "up",
			Usage: "start a local Nomad with Allot's plugins and run until Ctrl-C",
			Description: "Starts a single Nomad v1.6.1 agent (server and client) bound to 127.0.0.1\n" +
				"with the plugins found in -bin-dir, waits until its node is ready, creates\n" +
				"the demo tenants ml-research and ml-prod, starts allot-governor in front of\n" +
				"Nomad, prints what to do next, and on Ctrl-C stops the governor, every job\n" +
				"and the agent and removes its data. This is what `make dev` runs.",
			Flags:  upFlags(),
			Action: upAction,
		}},
	}
}

func upFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "dir", Value: ".dev", Usage: "directory for the agent's config, data and log"},
		&cli.StringFlag{Name: "bin-dir", Usage: "directory holding nomad and the plugin binaries (default: allotctl's own directory)"},
		&cli.IntFlag{Name: "http-port", Value: 4646, Usage: "Nomad HTTP API and UI port"},
		&cli.IntFlag{Name: "rpc-port", Value: 4647, Usage: "Nomad RPC port"},
		&cli.IntFlag{Name: "serf-port", Value: 4648, Usage: "Nomad serf port"},
		&cli.IntFlag{Name: "governor-port", Value: 4680, Usage: "allot-governor port (Nomad API proxy, /allot/v1, /metrics)"},
		&cli.StringFlag{Name: "log-level", Value: "INFO", Usage: "Nomad agent log level"},
		&cli.StringFlag{Name: "inventory", Usage: "device inventory file (default: device-plugin/inventory/examples/dev-node.hcl beside -bin-dir)"},
		&cli.BoolFlag{Name: "ha", Usage: "HA mode: a Consul dev agent (127.0.0.1:8500), PostgreSQL for the shared ledger and two governors (-governor-port and the next), docs/ha.md"},
	}
}

func upAction(c *cli.Context) error {
	opts, err := optionsFrom(c)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Up(ctx, opts, c.App.Writer)
}

func optionsFrom(c *cli.Context) (Options, error) {
	binDir := c.String("bin-dir")
	if binDir == "" {
		exe, err := os.Executable()
		if err != nil {
			return Options{}, fmt.Errorf("finding allotctl's directory: %w", err)
		}
		binDir = filepath.Dir(exe)
	}
	dir, err := filepath.Abs(c.String("dir"))
	if err != nil {
		return Options{}, err
	}
	binDir, err = filepath.Abs(binDir)
	if err != nil {
		return Options{}, err
	}
	inventory := c.String("inventory")
	if inventory == "" {
		inventory = filepath.Join(filepath.Dir(binDir), "device-plugin", "inventory", "examples", "dev-node.hcl")
	}
	return Options{
		InventoryFile: inventory,
		JobspecsDir:   filepath.Join(filepath.Dir(binDir), "jobspecs"),
		Dir:           dir,
		BinDir:        binDir,
		HTTPPort:      c.Int("http-port"),
		RPCPort:       c.Int("rpc-port"),
		SerfPort:      c.Int("serf-port"),
		GovernorPort:  c.Int("governor-port"),
		LogLevel:      c.String("log-level"),
		HA:            c.Bool("ha"),
	}, nil
}
