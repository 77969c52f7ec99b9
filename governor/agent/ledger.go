package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/reconcile"
	"github.com/allot-sh/allot/governor/server"
)

// startLedger starts the ledger when it is configured: it records until
// ctx ends, serves the server's ledger reports, and sees the namespace
// writes that pass through the proxy. It returns the ledger (nil when not
// configured).
func startLedger(ctx context.Context, cfg config.Config, client *api.Client, store *cluster.Store,
	rec *reconcile.Reconciler, authn *auth.Authenticator, m *metrics.Metrics, srv *server.Server, log hclog.Logger) (*ledger.Service, error) {
	if !cfg.Ledger.Enabled() {
		log.Info("ledger not configured; usage, cost and audit are not recorded (config: data_dir, or ledger { path = \"...\" })")
		return nil, nil
	}
	if cfg.Ledger.Driver == "sqlite" {
		if err := os.MkdirAll(filepath.Dir(cfg.Ledger.Path), 0o700); err != nil {
			return nil, fmt.Errorf("ledger directory: %w", err)
		}
	}
	// Under HA only the leader records (startHA runs the recorder for each
	// term); every governor answers reports from the shared database.
	lg, err := ledger.Start(ctx, ledger.Options{Config: cfg.Ledger, Client: client, Store: store, Plans: rec,
		Journal: &rec.Journal, Auth: authn, Registry: m.Registry, Log: log.Named("ledger"), ManualRecorder: cfg.HA.Enabled})
	if err != nil {
		return nil, err
	}
	srv.Ledger = lg.API
	srv.Proxy = lg.Wrap(srv.Proxy)
	log.Info("ledger running", "driver", cfg.Ledger.Driver, "path", cfg.Ledger.Path)
	return lg, nil
}
