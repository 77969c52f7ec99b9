package metrics

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/quota"
)

func TestObservePlanSetsTenantGauges(t *testing.T) {
	m := New()
	m.ObservePlan(&engine.Plan{Tenants: []engine.TenantStatus{
		{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "ml", Quota: quota.Vector{"gpu": 8}, Limit: quota.Vector{"gpu": 12}}},
			Usage: quota.Vector{"gpu": 6}, Queued: 3},
		{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "bad"}, Err: errors.New("x")}},
	}})
	must.Eq(t, 3.0, testutil.ToFloat64(m.Pending.WithLabelValues("ml")))
	must.Eq(t, 8.0, testutil.ToFloat64(m.Quota.WithLabelValues("ml", "gpu", "quota")))
	must.Eq(t, 12.0, testutil.ToFloat64(m.Quota.WithLabelValues("ml", "gpu", "limit")))
	must.Eq(t, 6.0, testutil.ToFloat64(m.Usage.WithLabelValues("ml", "gpu")))
	must.Eq(t, 1.0, testutil.ToFloat64(m.QuotaErrors.WithLabelValues("bad")))
	must.Eq(t, 0.0, testutil.ToFloat64(m.QuotaErrors.WithLabelValues("ml")))
}

// TestNamesMatchTheDocs keeps docs/governor.md's metric table honest.
func TestNamesMatchTheDocs(t *testing.T) {
	m := New()
	m.ObservePlan(&engine.Plan{Tenants: []engine.TenantStatus{{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "ml",
		Quota: quota.Vector{"gpu": 1}}}, Usage: quota.Vector{"gpu": 1}}}})
	m.AdmittedTotal.WithLabelValues("ml", "queue").Inc()
	m.HeldTotal.WithLabelValues("ml", "direct").Inc()
	m.AdmissionWait.WithLabelValues("ml").Observe(1)
	m.CycleSeconds.Observe(0.01)
	m.Submissions.WithLabelValues("ml", "queued").Inc()
	m.Preemptions.WithLabelValues("reclaim").Inc()
	m.LostWork.Add(3)
	m.Unpinned.WithLabelValues("ml").Inc()
	m.Stopped.WithLabelValues("ml", "max-runtime").Inc()
	families, err := m.Registry.Gather()
	must.NoError(t, err)
	var got []string
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "allot_") {
			got = append(got, f.GetName())
		}
	}
	sort.Strings(got)
	must.Eq(t, []string{
		"allot_actuation_conflicts_total", "allot_actuation_errors_total", "allot_admission_wait_seconds",
		"allot_admitted_jobs_total", "allot_cycle_seconds", "allot_held_jobs_total", "allot_lost_work_seconds_total",
		"allot_pending_jobs", "allot_preemptions_total", "allot_proxy_submissions_total", "allot_quota", "allot_quota_config_errors",
		"allot_stopped_jobs_total", "allot_unpinned_jobs_total", "allot_usage", "allot_watch_resyncs_total",
	}, got)
}
