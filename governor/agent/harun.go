package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/ha"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/proxy"
	"github.com/allot-sh/allot/governor/reconcile"
)

// haPoll is how often the term loop looks at the lease besides the
// elector's change notifications (a lease that runs out is noticed within
// it; writes never rely on it: they check the lease themselves).
const haPoll = 250 * time.Millisecond

// haRuntime runs this governor's terms: on gaining one it brings the
// store up to Nomad's present (sealed admissions in job meta), through the
// watcher (rebuild.go), before the first write, then runs the leader-only
// work (decision loop, ledger recorder) until the term ends.
type haRuntime struct {
	l *leadership
	// watch catches the store up with Nomad (or restarts the cluster
	// watcher for a fresh listing); store is what it fills.
	watch  *watchRunner
	store  *cluster.Store
	parent context.Context
	// leaderOnly runs for the length of one term (nil: nothing).
	leaderOnly func(ctx context.Context)
	log        hclog.Logger
	leader     prometheus.Gauge
	term       prometheus.Gauge
}

// haGauges registers allot_leader and allot_term.
func haGauges(reg prometheus.Registerer) (leader, term prometheus.Gauge) {
	leader = prometheus.NewGauge(prometheus.GaugeOpts{Name: "allot_leader",
		Help: "1 while this governor leads (HA: holds the lock with a valid lease and rebuilt its state), else 0"})
	term = prometheus.NewGauge(prometheus.GaugeOpts{Name: "allot_term",
		Help: "the current leader term (epoch) as this governor knows it; 0 while there is no leader"})
	reg.MustRegister(leader, term)
	return leader, term
}

// run campaigns (until elect ends or the elector resigns) and follows
// the terms until ctx ends. The campaign has its own context so that a
// shutdown stops the writes before the lock is given up (stepDown).
func (h *haRuntime) run(ctx, elect context.Context) {
	go func() {
		if err := h.l.e.Run(elect); err != nil && elect.Err() == nil {
			h.log.Error("leader election stopped", "error", err)
		}
	}()
	tick := time.NewTicker(haPoll)
	defer tick.Stop()
	var cur uint64
	endTerm := func() {}
	defer func() { endTerm() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.l.e.Changes():
		case <-tick.C:
		}
		t, ok := h.l.e.Leading()
		h.observe()
		switch {
		case ok && t.Epoch != cur:
			endTerm()
			cur = t.Epoch
			endTerm = h.startTerm(ctx, t)
		case !ok && cur != 0:
			endTerm()
			endTerm, cur = func() {}, 0
			h.log.Info("not leading: standing by")
		}
	}
}

// startTerm starts the work of term t; the returned function ends it (and
// the term ending ends it too).
func (h *haRuntime) startTerm(parent context.Context, t ha.Term) func() {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-t.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	go h.lead(ctx, t)
	return cancel
}

// lead rebuilds the store from Nomad in term t, lets the parts act, and
// runs the leader-only work until the term ends.
func (h *haRuntime) lead(ctx context.Context, t ha.Term) {
	log := h.log.With("epoch", t.Epoch)
	log.Info("won the lead; rebuilding state from Nomad before the first write")
	// The catch-up barrier on the running stream, or the watcher lists the
	// cluster again and streams on from that listing's index: either way no
	// event is lost or overwritten by older state (rebuild.go).
	if !h.watch.rebuild(ctx, h.parent) {
		return
	}
	h.l.setRebuilt(t.Epoch)
	h.observe()
	log.Info("leading", "lease_deadline_in", time.Until(t.Deadline()).Round(time.Millisecond))
	if h.leaderOnly != nil {
		h.leaderOnly(ctx)
	}
}

// observe sets the gauges.
func (h *haRuntime) observe() {
	if _, ok := h.l.term(); ok {
		h.leader.Set(1)
	} else {
		h.leader.Set(0)
	}
	h.term.Set(float64(h.l.e.Status().Epoch))
}

// leadershipFor builds the election when HA is configured (nil without).
func leadershipFor(h config.HA, log hclog.Logger) (*leadership, error) {
	if !h.Enabled {
		return nil, nil
	}
	l, err := newLeadership(h, log)
	if err != nil {
		return nil, fmt.Errorf("high availability: %w", err)
	}
	log.Info("high availability: campaigning for the lead", "member", h.MemberID, "advertise", h.Advertise,
		"consul", h.Consul.Address, "lock_key", h.LockKey, "session_ttl", h.SessionTTL, "lock_delay", h.LockDelay,
		"check_ttl", h.CheckTTL)
	return l, nil
}

// proxyLeadership is l as the proxy's Leadership (a nil interface without
// HA, not a nil pointer in one).
func proxyLeadership(l *leadership) proxy.Leadership {
	if l == nil {
		return nil
	}
	return l
}

// startHA starts the election and the term loop. The leader runs the
// decision loop (on every change, as a single governor does) and the
// ledger's recorder, one term at a time; a standby runs a preview cycle
// every cycle interval, so its reads stay fresh (its actuator writes
// nothing).
func startHA(ctx, elect context.Context, l *leadership, watch *watchRunner, rec *reconcile.Reconciler,
	lg *ledger.Service, m *metrics.Metrics, log hclog.Logger) {
	leader, term := haGauges(m.Registry)
	h := &haRuntime{l: l, watch: watch, store: watch.w.Store, parent: ctx, log: log, leader: leader, term: term}
	h.leaderOnly = func(ctx context.Context) {
		go rec.Run(ctx)
		if lg != nil {
			lg.Recorder.Run(ctx)
		}
	}
	go h.run(ctx, elect)
	go h.preview(ctx, rec)
}

// preview cycles every interval while this governor does not lead.
func (h *haRuntime) preview(ctx context.Context, rec *reconcile.Reconciler) {
	tick := time.NewTicker(rec.Interval)
	defer tick.Stop()
	for {
		if _, leading := h.l.term(); !leading && h.store.Ready() {
			rec.Cycle(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
