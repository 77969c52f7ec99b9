package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// keyLoadTimeout bounds loading the admission key from Nomad at start;
// keyRetry is the pause between attempts while Nomad cannot be reached.
const (
	keyLoadTimeout = 30 * time.Second
	keyRetry       = time.Second
)

// admissionSealer loads the admission key (the configured file, else the
// Nomad variable, created once with the governor's own token) and returns
// the sealer the store, the actuator and the proxy share. While Nomad
// cannot be reached it retries until keyLoadTimeout; a refusal (403, a
// bad key) ends at once.
func admissionSealer(ctx context.Context, cfg config.Admission, client *api.Client, log hclog.Logger) (*jobmeta.Sealer, error) {
	ctx, cancel := context.WithTimeout(ctx, keyLoadTimeout)
	defer cancel()
	src := jobmeta.KeySource{File: cfg.KeyFile, Vars: client.Variables(), Namespace: cfg.KeyNamespace}
	for {
		key, err := jobmeta.LoadKey(ctx, src)
		if err == nil {
			logKeySource(cfg, log)
			return jobmeta.NewSealer(key)
		}
		if cfg.KeyFile != "" || !retryable(err) {
			return nil, fmt.Errorf("loading the admission key: %w", err)
		}
		log.Warn("cannot load the admission key from Nomad yet, retrying", "error", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("loading the admission key: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(keyRetry):
		}
	}
}

// retryable tells whether a failed key load may succeed later: anything
// but an HTTP answer from Nomad (403 Permission denied, 400, …) or a key
// that is there but malformed.
func retryable(err error) bool {
	var sc interface{ StatusCode() int }
	if errors.As(err, &sc) {
		return sc.StatusCode() >= 500
	}
	return !errors.Is(err, jobmeta.ErrMalformedKey)
}

func logKeySource(cfg config.Admission, log hclog.Logger) {
	if cfg.KeyFile != "" {
		log.Info("admission key loaded", "file", cfg.KeyFile)
		return
	}
	log.Info("admission key loaded from Nomad Variables", "namespace", orDefault(cfg.KeyNamespace, jobmeta.DefaultKeyNamespace),
		"path", jobmeta.DefaultKeyPath)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
