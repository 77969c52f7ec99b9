// Command allot-governor governs a Nomad cluster: tenant quotas from
// namespace meta, a queue with reasons, admission through a Nomad API
// proxy. See docs/governor.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/governor/agent"
	"github.com/allot-sh/allot/governor/config"
)

func main() {
	cfg, err := config.Load(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "allot-governor:", err)
		os.Exit(2)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "allot-governor", Level: hclog.LevelFromString(cfg.LogLevel)})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := agent.Run(ctx, cfg, log, nil); err != nil {
		log.Error("governor stopped", "error", err)
		os.Exit(1)
	}
}
