package idle

import (
	"context"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/prometheus/client_golang/prometheus"
)

// acting reports whether this governor carries out the ladder's effects
// (task events, reclaims, ledger entries): always without HA; with HA only
// while it leads, so a warning is told and recorded once, not once per
// governor. Every governor observes, logs and exports metrics.
func (s *Service) acting() bool { return s.o.Leading == nil || s.o.Leading() }

// handle acts on one ladder transition: log, metric, record, reclaim.
func (s *Service) handle(ctx context.Context, now time.Time, e Event) {
	c := e.Candidate
	log := s.o.Log.With("namespace", c.Namespace, "job", c.JobID, "alloc", c.AllocID, "class", c.Class)
	switch e.Kind {
	case Suspect:
		// not a warning: the owner hears nothing yet, the ledger keeps
		// nothing; the candidate is listed with step suspect
		log.Debug("idle allocation suspect; grace started", "idle_since", c.IdleSince, "warn_at", c.WarnAt, "due_at", c.DueAt)
		if s.o.Metrics != nil {
			s.o.Metrics.event(e)
		}
		return
	case Warn:
		log.Warn("idle allocation warned", "idle_since", c.IdleSince, "due_at", c.DueAt, "action", e.Action, "production", c.Production)
		if s.acting() {
			s.notify(ctx, log, c, e.Kind, e.Action)
		}
	case Cancel:
		log.Info("warned allocation busy again; warning withdrawn")
		if s.acting() {
			s.notify(ctx, log, c, e.Kind, e.Action)
		}
	case Reclaim:
		if s.o.Reclaimer == nil {
			return
		}
		if !s.acting() {
			log.Debug("idle allocation due; the leader reclaims it")
			return
		}
		if !s.o.Detector.jobDue(c.Namespace, c.JobID) {
			log.Debug("idle allocation due, waiting for the job's other allocations")
			return
		}
		if err := s.o.Reclaimer.Reclaim(ctx, c, e.Action); err != nil {
			log.Warn("reclaiming idle allocation failed; retried next period", "error", err)
			return
		}
		s.o.Detector.Reclaimed(c.AllocID)
		log.Warn("idle allocation reclaimed", "action", e.Action, "idle_since", c.IdleSince)
	}
	if s.o.Metrics != nil {
		s.o.Metrics.event(e)
	}
	if s.o.Recorder != nil && s.acting() {
		if err := s.o.Recorder.RecordIdle(ctx, now, e); err != nil {
			log.Warn("recording idle event failed", "error", err)
		}
	}
}

// zombies reads every device node's stats and reports devices with memory
// or processes that no live allocation holds.
func (s *Service) zombies(ctx context.Context, now time.Time, allocs []*api.AllocationListStub, hs []held) {
	nodes, err := s.o.Source.DeviceNodes(ctx)
	if err != nil {
		s.o.Log.Warn("listing device nodes for zombies failed", "error", err)
		return
	}
	holding := map[deviceKey]bool{}
	for _, h := range hs {
		for _, id := range h.devices {
			holding[deviceKey{h.alloc.NodeID, id}] = true
		}
	}
	var devs []DeviceSample
	for _, n := range nodes {
		groups, err := s.o.Source.NodeDeviceStats(ctx, n)
		if err != nil {
			continue // missing telemetry is never a zombie
		}
		for id, in := range instances(groups) {
			devs = append(devs, DeviceSample{Node: n, DeviceID: id, At: now, Known: true, MemoryMiB: in.memMiB, Processes: in.processes})
		}
	}
	isLive := func(node, dev string) bool { return holding[deviceKey{node, dev}] }
	for _, z := range s.o.Detector.Zombies(devs, isLive, s.o.ZombieMemoryMiB) {
		s.o.Log.Warn("zombie device: memory or processes with no live allocation", "node", z.Node, "device", z.DeviceID,
			"memory_mib", z.MemoryMiB, "processes", z.Processes, "since", z.Since)
		if s.o.Metrics != nil {
			s.o.Metrics.Zombies.Inc()
		}
		if s.o.Recorder != nil && s.acting() {
			if err := s.o.Recorder.RecordZombie(ctx, z); err != nil {
				s.o.Log.Warn("recording zombie failed", "error", err)
			}
		}
	}
}

// Metrics are the idle detector's Prometheus metrics.
type Metrics struct {
	Events     *prometheus.CounterVec
	Zombies    prometheus.Counter
	Candidates *prometheus.GaugeVec
	Watched    prometheus.Gauge
	// IdleDeviceSeconds: device-seconds observed idle, per namespace.
	IdleDeviceSeconds *prometheus.CounterVec
	seen              map[string]float64
}

// NewMetrics creates and registers the metrics (reg may be nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "allot_idle_events_total",
			Help: "Idle ladder transitions (suspect, warn, cancel, reclaim) per namespace and waste class."}, []string{"namespace", "event", "class"}),
		Zombies: prometheus.NewCounter(prometheus.CounterOpts{Name: "allot_idle_zombies_total",
			Help: "Devices reported with memory or processes and no live allocation."}),
		Candidates: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "allot_idle_candidates",
			Help: "Allocations currently idle, per namespace and ladder step."}, []string{"namespace", "step"}),
		Watched: prometheus.NewGauge(prometheus.GaugeOpts{Name: "allot_idle_watched_allocations",
			Help: "Allocations with devices the idle detector follows."}),
		IdleDeviceSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "allot_idle_device_seconds_total",
			Help: "Device-seconds observed idle, per namespace."}, []string{"namespace"}),
		seen: map[string]float64{},
	}
	if reg != nil {
		reg.MustRegister(m.Events, m.Zombies, m.Candidates, m.Watched, m.IdleDeviceSeconds)
	}
	return m
}

var eventNames = map[Transition]string{Suspect: "suspect", Warn: "warn", Cancel: "cancel", Reclaim: "reclaim"}

func (m *Metrics) event(e Event) {
	m.Events.WithLabelValues(e.Candidate.Namespace, eventNames[e.Kind], e.Candidate.Class).Inc()
}

// update refreshes the gauges and adds the idle device-seconds observed
// since the last period (per allocation, so each second counts once).
func (m *Metrics) update(d *Detector) {
	m.Watched.Set(float64(d.Watched()))
	m.Candidates.Reset()
	for _, c := range d.Candidates() {
		m.Candidates.WithLabelValues(c.Namespace, string(c.Step)).Inc()
	}
	seen := map[string]float64{}
	for id, t := range d.idleTotals() {
		seen[id] = t.seconds
		if delta := t.seconds - m.seen[id]; delta > 0 {
			m.IdleDeviceSeconds.WithLabelValues(t.namespace).Add(delta)
		}
	}
	m.seen = seen
}
