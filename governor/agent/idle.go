package agent

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/idle"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/server"
)

// startIdle starts idle and zombie detection when it is configured: it
// reads device telemetry every period, warns, reclaims through the
// actuator's requeue path, records in the ledger (when there is one) and
// serves /allot/v1/idle.
func startIdle(ctx context.Context, cfg config.Config, client *api.Client, store *cluster.Store, act *actuate.Actuator,
	governed func(ns string) bool, lg *ledger.Service, m *metrics.Metrics, srv *server.Server, log hclog.Logger) {
	ic := cfg.Idle
	if !ic.Enabled {
		log.Info("idle detection not configured (config: idle { ... })")
		return
	}
	warnOnly := map[string]bool{}
	for _, c := range ic.WarnOnlyClasses {
		warnOnly[c] = true
	}
	src := idle.NomadSource{Client: client}
	o := idle.Options{Source: src, Namespaces: src, Metrics: idle.NewMetrics(m.Registry),
		Reclaimer: idle.ActuatorReclaimer{Jobs: client.Jobs(), Applier: act}, Notifier: idle.NomadNotifier{Client: client},
		Defaults: idle.Policy{Window: ic.Window, ThresholdPct: ic.ThresholdPct, MemoryMiB: ic.MemoryMiB, Grace: ic.Grace,
			Notice: ic.Notice, Action: idle.Action(ic.Action), UnclaimedTTL: ic.UnclaimedTTL},
		WarnOnly: warnOnly, Governed: governed, ZombieMemoryMiB: ic.ZombieMemoryMiB, Period: ic.Period, Now: time.Now, Log: log.Named("idle"),
		ClassOf: func(ns, id string) string {
			if j, ok := store.Job(ns, id); ok {
				return j.Class
			}
			return ""
		}}
	if lg != nil {
		o.Recorder, o.Ledger = idle.LedgerRecorder{DB: lg.DB}, lg.DB
	}
	if act.Fence != nil { // HA: every governor observes, only the leader tells, reclaims and records
		o.Leading = func() bool { _, _, ok := act.Fence.Lease(); return ok }
	}
	s := idle.NewService(o)
	srv.Idle = s
	go s.Run(ctx)
	log.Info("idle detection running", "period", ic.Period, "window", ic.Window, "grace", ic.Grace, "notice", ic.Notice, "action", ic.Action)
}
