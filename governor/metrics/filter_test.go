package metrics

import (
	"sort"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/quota"
)

// seriesOf gathers g and lists "family/namespace" per series ("" for a
// series without a namespace).
func seriesOf(t *testing.T, m *Metrics, keep func(string) bool, global bool) map[string]bool {
	mfs, err := Filtered(m.Registry, keep, global).Gather()
	must.NoError(t, err)
	out := map[string]bool{}
	for _, mf := range mfs {
		for _, s := range mf.Metric {
			ns, _ := namespaceOf(s)
			out[mf.GetName()+"/"+ns] = true
		}
	}
	return out
}

func TestFilteredKeepsOnlyReadableNamespaces(t *testing.T) {
	m := New()
	m.ObservePlan(&engine.Plan{Tenants: []engine.TenantStatus{
		{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "ml", Limit: quota.Vector{"gpu": 8}}}, Usage: quota.Vector{"gpu": 1}},
		{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "secret", Limit: quota.Vector{"gpu": 8}}}, Usage: quota.Vector{"gpu": 2}},
	}})
	m.Preemptions.WithLabelValues("reclaim").Inc()
	onlyML := func(ns string) bool { return ns == "ml" }

	tenant := seriesOf(t, m, onlyML, false)
	var names []string
	for k := range tenant {
		names = append(names, k)
	}
	sort.Strings(names)
	must.Eq(t, []string{"allot_pending_jobs/ml", "allot_quota/ml", "allot_quota_config_errors/ml", "allot_usage/ml"}, names)

	all := seriesOf(t, m, func(string) bool { return true }, true)
	must.True(t, all["allot_usage/secret"])
	must.True(t, all["allot_preemptions_total/"])
	must.True(t, all["go_goroutines/"])

	mixed := seriesOf(t, m, onlyML, true)
	must.False(t, mixed["allot_usage/secret"])
	must.True(t, mixed["go_goroutines/"])
}
