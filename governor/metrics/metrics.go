// Package metrics defines the governor's Prometheus metrics (allot_*) on a
// registry of its own.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/allot-sh/allot/governor/engine"
)

// Metrics holds every governor metric.
type Metrics struct {
	Registry *prometheus.Registry

	Pending       *prometheus.GaugeVec
	AdmittedTotal *prometheus.CounterVec
	HeldTotal     *prometheus.CounterVec
	AdmissionWait *prometheus.HistogramVec
	Quota         *prometheus.GaugeVec
	Usage         *prometheus.GaugeVec
	QuotaErrors   *prometheus.GaugeVec
	CycleSeconds  prometheus.Histogram
	Conflicts     prometheus.Counter
	ActuateErrors prometheus.Counter
	Resyncs       prometheus.Counter
	Submissions   *prometheus.CounterVec
	// Preemptions counts preempted (requeued) victim jobs by reason
	// (reclaim, priority).
	Preemptions *prometheus.CounterVec
	// LostWork sums the work victims lost: per allocation, the time since
	// its last checkpoint (or start).
	LostWork prometheus.Counter
	// Unpinned counts applied unpins (pinned, admitted jobs Nomad could
	// not place, rewritten without their placement pin), by namespace.
	Unpinned *prometheus.CounterVec
	// Stopped counts applied Stop decisions (jobs deregistered for good,
	// not queued again), by namespace and reason (a fixed set: see
	// docs/governor.md#metrics).
	Stopped *prometheus.CounterVec
}

// New creates and registers the metrics.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "allot_pending_jobs",
			Help: "Jobs held in the queue, by namespace."}, []string{"namespace"}),
		AdmittedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "allot_admitted_jobs_total",
			Help: "Jobs admitted, by namespace and path (queue or proxy)."}, []string{"namespace", "path"}),
		HeldTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "allot_held_jobs_total",
			Help: "Jobs held, by namespace and path (proxy or direct)."}, []string{"namespace", "path"}),
		AdmissionWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "allot_admission_wait_seconds",
			Help:    "Time from queued-at to admission.",
			Buckets: prometheus.ExponentialBuckets(0.1, 2, 18)}, []string{"namespace"}),
		Quota: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "allot_quota",
			Help: "Tenant quota by resource and kind (quota, limit, lend)."}, []string{"namespace", "resource", "kind"}),
		Usage: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "allot_usage",
			Help: "Tenant usage (live allocations plus reservations) by resource."}, []string{"namespace", "resource"}),
		QuotaErrors: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "allot_quota_config_errors",
			Help: "1 when a namespace's allot.* meta is invalid (its last valid quota applies)."}, []string{"namespace"}),
		CycleSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "allot_cycle_seconds",
			Help: "Duration of one decision cycle (engine only).", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
		Conflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "allot_actuation_conflicts_total",
			Help: "Decisions not applied because the job changed meanwhile."}),
		ActuateErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "allot_actuation_errors_total",
			Help: "Decisions that failed to apply."}),
		Resyncs: prometheus.NewCounter(prometheus.CounterOpts{Name: "allot_watch_resyncs_total",
			Help: "Full resyncs of the cluster watcher."}),
		Submissions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "allot_proxy_submissions_total",
			Help: "Job writes through the proxy, by outcome."}, []string{"namespace", "outcome"}),
		Preemptions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "allot_preemptions_total",
			Help: "Victim jobs preempted and requeued, by reason (reclaim, priority, fair-share, move, queue-order)."}, []string{"reason"}),
		LostWork: prometheus.NewCounter(prometheus.CounterOpts{Name: "allot_lost_work_seconds_total",
			Help: "Work lost by preemption: per victim allocation, seconds since its last checkpoint (or start)."}),
		Unpinned: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "allot_unpinned_jobs_total",
			Help: "Pinned, admitted jobs Nomad could not place, rewritten without their placement pin, by namespace."}, []string{"namespace"}),
		Stopped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "allot_stopped_jobs_total",
			Help: "Jobs the governor stopped for good (deregistered, not queued again), by namespace and reason (max-runtime, over-limit, class, priority, preemption, other)."},
			[]string{"namespace", "reason"}),
	}
	m.Registry.MustRegister(m.Pending, m.AdmittedTotal, m.HeldTotal, m.AdmissionWait, m.Quota, m.Usage, m.QuotaErrors,
		m.CycleSeconds, m.Conflicts, m.ActuateErrors, m.Resyncs, m.Submissions, m.Preemptions, m.LostWork, m.Unpinned, m.Stopped,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObservePlan sets the per-tenant gauges from a plan.
func (m *Metrics) ObservePlan(p *engine.Plan) {
	m.Pending.Reset()
	m.Quota.Reset()
	m.Usage.Reset()
	m.QuotaErrors.Reset()
	for _, t := range p.Tenants {
		ns := t.Namespace
		m.Pending.WithLabelValues(ns).Set(float64(t.Queued))
		for kind, v := range map[string]map[string]int64{"quota": t.Quota, "limit": t.Limit, "lend": t.Lend} {
			for r, n := range v {
				m.Quota.WithLabelValues(ns, r, kind).Set(float64(n))
			}
		}
		for r, n := range t.Usage {
			m.Usage.WithLabelValues(ns, r).Set(float64(n))
		}
		bad := 0.0
		if t.Err != nil {
			bad = 1
		}
		m.QuotaErrors.WithLabelValues(ns).Set(bad)
	}
}
