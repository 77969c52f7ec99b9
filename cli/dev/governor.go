package dev

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/internal/proc"
)

// DemoTenants are the governed namespaces the dev environment creates. Both
// are in the default cohort, so on the dev node's 8 H200s each can borrow
// what the other leaves idle, up to its limit.
var DemoTenants = []*api.Namespace{
	{
		Name:        "ml-research",
		Description: "Allot demo tenant: research training",
		Meta:        map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "6"},
	},
	{
		Name:        "ml-prod",
		Description: "Allot demo tenant: production inference and training",
		Meta: map[string]string{
			"allot.quota.gpu": "4", "allot.limit.gpu": "8",
			"allot.classes": "production,high,standard",
		},
	},
}

// GovernorAddr is the governor's base URL in the dev environment.
func (e *Env) GovernorAddr() string {
	return fmt.Sprintf("http://127.0.0.1:%d", e.GovernorPort)
}

// startGovernor creates the demo tenants and starts allot-governor in
// front of the dev Nomad; it waits until the governor is synced and healthy.
func (e *Env) startGovernor(ctx context.Context, out io.Writer) error {
	bin := filepath.Join(e.BinDir, "allot-governor")
	if _, err := os.Stat(bin); err != nil {
		fmt.Fprintf(out, "    governor: %s not built; Nomad runs without it\n", bin)
		return nil
	}
	if err := e.createTenants(out); err != nil {
		return err
	}
	cfg, err := e.writeGovernorConfig()
	if err != nil {
		return err
	}
	args := []string{
		"-config", cfg,
		"-nomad-addr", e.Agent.Config().HTTPAddr(),
		"-listen", fmt.Sprintf("127.0.0.1:%d", e.GovernorPort),
		"-log-level", "info",
	}
	// NOMAD_ADDR may already point at a governor; the flags say where Nomad is.
	p, err := proc.Start(bin, args, []string{"NOMAD_ADDR=", "NOMAD_TOKEN="}, filepath.Join(e.Dir, "governor.log"))
	if err != nil {
		return err
	}
	e.Governor = p
	if err := p.WaitHTTP(ctx, e.GovernorAddr()+"/readyz"); err != nil {
		return fmt.Errorf("starting the governor: %w", err)
	}
	fmt.Fprintf(out, "    governor ready on %s (log: %s)\n", e.GovernorAddr(), p.LogPath)
	return nil
}

// devGovernorConfig sets the governor's data dir to the dev data dir, which
// turns the ledger on there (SQLite, ledger.db), with demo rates, so
// `allotctl report` and `allotctl audit` answer in the quickstart.
const devGovernorConfig = `data_dir = %q

ledger {
  currency        = "USD"
  device_rates    = { "nvidia/gpu/H200" = 4.00, "huawei/npu/Ascend910B" = 2.50 }
  cpu_ghz_hour    = 0.02
  memory_gib_hour = 0.005
}
`

// writeGovernorConfig writes the dev governor's config file and returns
// its path.
func (e *Env) writeGovernorConfig() (string, error) {
	path := filepath.Join(e.Dir, "governor.hcl")
	body := fmt.Sprintf(devGovernorConfig, e.Dir)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return "", fmt.Errorf("writing the dev governor config: %w", err)
	}
	return path, nil
}

// createTenants registers the demo namespaces with their quota meta.
func (e *Env) createTenants(out io.Writer) error {
	for _, ns := range DemoTenants {
		if _, err := e.Nomad.Namespaces().Register(ns, nil); err != nil {
			return fmt.Errorf("creating demo tenant %s: %w", ns.Name, err)
		}
		fmt.Fprintf(out, "    tenant %s: gpu quota %s, limit %s\n", ns.Name, ns.Meta["allot.quota.gpu"], ns.Meta["allot.limit.gpu"])
	}
	return nil
}

// stopGovernor stops the governor first, so it does not react to the jobs
// being stopped.
func (e *Env) stopGovernor(out io.Writer) {
	if e.Governor == nil {
		return
	}
	fmt.Fprintln(out, "    stopping the governor")
	if err := e.Governor.Stop(15 * time.Second); err != nil {
		fmt.Fprintf(out, "    warning: %v\n", err)
	}
}
