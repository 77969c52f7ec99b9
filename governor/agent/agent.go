// Package agent wires the governor's parts together and runs them: the
// cluster watcher, the decision loop and the HTTP server.
package agent

import (
	"context"
	cryptotls "crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/proxy"
	"github.com/allot-sh/allot/governor/quota"
	"github.com/allot-sh/allot/governor/reconcile"
	"github.com/allot-sh/allot/governor/server"
)

// Run runs the governor until ctx ends. ready, when set, is called with
// the listen address once the server accepts connections.
func Run(ctx context.Context, cfg config.Config, log hclog.Logger, ready func(net.Addr)) error {
	hc, client, err := nomadClients(cfg.Nomad)
	if err != nil {
		return err
	}
	target, _ := url.Parse(cfg.Nomad.Address) // validated by config
	warnNomadPreemption(client, log)
	m := metrics.New()
	book := quota.NewBook(cfg.ClassNames())
	store := cluster.NewStore(book, cfg.GovernsNamespace)
	// One admission key for the store (which records count), the actuator
	// and the proxy (which write them): governor/jobmeta.
	sealer, err := admissionSealer(ctx, cfg.Admission, client, log.Named("jobmeta"))
	if err != nil {
		return err
	}
	store.UseSealer(sealer)
	store.UseTokens(tokensFor(cfg, client, log.Named("jobmeta")))
	watcher := &cluster.Watcher{Source: &cluster.NomadSource{Client: client}, Store: store, Log: log.Named("cluster"),
		After: time.After, BackoffMax: cfg.ResyncBackoffMax, Resyncs: m.Resyncs.Inc}
	runner := newWatchRunner(watcher)
	act := &actuate.Actuator{Jobs: client.Jobs(), Store: store, Sealer: sealer, Log: log.Named("actuate"), Now: time.Now}
	lead, err := leadershipFor(cfg.HA, log)
	if err != nil {
		return err
	}
	if lead != nil {
		act.Fence = lead // a standby's cycles are previews: it writes nothing
	}
	rec := &reconcile.Reconciler{Store: store, Config: cfg.Engine(), Metrics: m, Log: log.Named("reconcile"),
		Now: time.Now, Interval: cfg.CycleInterval, MinGap: 200 * time.Millisecond, Actuator: act}
	runtimes := learnRuntimes(rec) // before rec.Config is copied or read
	governed := func(ns string) bool {
		_, ok := book.Get(ns)
		return ok && cfg.GovernsNamespace(ns)
	}
	// Callers are resolved with their own tokens over the governor's TLS
	// transport to Nomad; hc carries no token (see nomadClients).
	authn := auth.New(auth.Options{Nomad: target, Client: hc, TTL: cfg.Auth.CacheTTL, MaxEntries: cfg.Auth.CacheSize,
		RequireClientCert: cfg.Nomad.RequireClientCert(), MetricsToken: cfg.Auth.MetricsToken, Log: log.Named("auth")})
	px := proxy.New(proxy.Options{Target: target, Transport: hc.Transport, Reconciler: rec, Store: store,
		Governed: governed, Log: log.Named("proxy"), Metrics: m, Auth: proxy.NomadACL{Auth: authn}, Sealer: sealer,
		MaxBody: cfg.Limits.MaxBodyBytes, MaxInFlight: cfg.Limits.MaxConcurrentAdmissions,
		Book: book, SystemJobs: cfg.SystemJobs, Region: nomadRegion(client, log), Leadership: proxyLeadership(lead)})
	srv := &server.Server{Plans: rec, Store: store, Proxy: px, Metrics: m, Log: log.Named("server"), Auth: authn,
		Engine: rec.Config, Now: time.Now, Debug: cfg.EnableDebug, Classes: rec.Config.Classes, Journal: &rec.Journal,
		RequireClientCert: cfg.Nomad.RequireClientCert(),
		Actuator:          act, // POST /allot/v1/jobs/<ns>/<id>/requeue: the same requeue path as preemption and idle reclaims
		Timeouts:          server.Timeouts{Read: cfg.HTTP.ReadTimeout, Write: cfg.HTTP.WriteTimeout}}
	if lead != nil {
		srv.HA = lead
	}
	lg, err := startLedger(ctx, cfg, client, store, rec, authn, m, srv, log)
	if err != nil {
		return err
	}
	followRuntimes(ctx, runtimes, lg, log.Named("estimate"))
	elect, stopElection := context.WithCancel(context.Background())
	defer stopElection()
	if lead != nil {
		startHA(ctx, elect, lead, runner, rec, lg, m, log.Named("ha"))
	}
	startIdle(ctx, cfg, client, store, act, governed, lg, m, srv, log)

	tc, err := listenerTLS(cfg.TLS)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	hs := newHTTPServer(srv.Handler(), cfg.HTTP, tc, log.Named("http"))
	errCh := make(chan error, 1)
	go func() { errCh <- serve(hs, ln) }()
	runner.start(ctx)
	if lead == nil {
		go rec.Run(ctx) // under HA the term loop runs it (harun.go)
	}
	log.Info("governor running", "listen", ln.Addr().String(), "tls", tc != nil, "client_certs", tc != nil && tc.ClientCAs != nil,
		"nomad", cfg.Nomad.Address)
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case <-ctx.Done():
	case err := <-errCh:
		return fmt.Errorf("serving: %w", err)
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if lead != nil {
		lead.stepDown(shut, log.Named("ha")) // writes stopped, lock released: a standby takes over at once
	}
	if err := hs.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}

// warnNomadPreemption logs a warning when Nomad's own batch or service
// preemption is on: it is quota-blind and checkpoint-blind, and would fight
// the governor's preemption (docs/governor.md, "Nomad's own preemption").
func warnNomadPreemption(client *api.Client, log hclog.Logger) {
	sc, _, err := client.Operator().SchedulerGetConfiguration(nil)
	if err != nil || sc == nil || sc.SchedulerConfig == nil {
		log.Debug("could not read Nomad's scheduler configuration", "error", err)
		return
	}
	pc := sc.SchedulerConfig.PreemptionConfig
	if pc.BatchSchedulerEnabled || pc.ServiceSchedulerEnabled {
		log.Warn("Nomad's batch/service scheduler preemption is enabled; the governor owns preemption for governed jobs, disable it (nomad operator scheduler set-config -preempt-batch-scheduler=false -preempt-service-scheduler=false)",
			"batch", pc.BatchSchedulerEnabled, "service", pc.ServiceSchedulerEnabled)
	}
}

// nomadClients builds the HTTP client (TLS configured) and the API client
// carrying the governor's own token. The proxy uses the HTTP client's
// transport only, so the governor's token never reaches a caller's request.
func nomadClients(n config.Nomad) (*http.Client, *api.Client, error) {
	hc := cleanhttp.DefaultPooledClient()
	tls := &api.TLSConfig{CACert: n.CACert, ClientCert: n.ClientCert, ClientKey: n.ClientKey,
		TLSServerName: n.TLSServerName, Insecure: n.TLSSkipVerify}
	if tr, ok := hc.Transport.(*http.Transport); ok && tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &cryptotls.Config{MinVersion: cryptotls.VersionTLS12}
	}
	if err := api.ConfigureTLS(hc, tls); err != nil {
		return nil, nil, fmt.Errorf("configuring TLS to Nomad: %w", err)
	}
	ac := api.DefaultConfig()
	ac.Address, ac.SecretID, ac.TLSConfig, ac.HttpClient = n.Address, n.Token, tls, hc
	client, err := api.NewClient(ac)
	if err != nil {
		return nil, nil, fmt.Errorf("creating Nomad client: %w", err)
	}
	return hc, client, nil
}

// nomadRegion is the region of the Nomad agent the governor talks to: the
// proxy refuses writes Nomad would apply to another region. Unknown (the
// agent could not be asked) means Nomad's default, "global".
func nomadRegion(client *api.Client, log hclog.Logger) string {
	region, err := client.Agent().Region()
	if err != nil || region == "" {
		log.Warn("cannot read Nomad's region; the proxy assumes \"global\"", "error", err)
		return api.GlobalRegion
	}
	return region
}
