package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// keyLoadTimeout bounds loading the admission key from Nomad at start.
const keyLoadTimeout = 30 * time.Second

// admissionSealer loads the admission key (the configured file, else the
// Nomad variable, created once with the governor's own token) and returns
// the sealer the store, the actuator and the proxy share.
func admissionSealer(ctx context.Context, cfg config.Admission, client *api.Client, log hclog.Logger) (*jobmeta.Sealer, error) {
	ctx, cancel := context.WithTimeout(ctx, keyLoadTimeout)
	defer cancel()
	src := jobmeta.KeySource{File: cfg.KeyFile, Vars: client.Variables(), Namespace: cfg.KeyNamespace}
	key, err := jobmeta.LoadKey(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("loading the admission key: %w", err)
	}
	if cfg.KeyFile != "" {
		log.Info("admission key loaded", "file", cfg.KeyFile)
	} else {
		log.Info("admission key loaded from Nomad Variables", "namespace", orDefault(cfg.KeyNamespace, jobmeta.DefaultKeyNamespace),
			"path", jobmeta.DefaultKeyPath)
	}
	return jobmeta.NewSealer(key)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
