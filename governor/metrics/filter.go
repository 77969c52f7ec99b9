package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// namespaceLabel is the label that makes a series per-tenant.
const namespaceLabel = "namespace"

// Filtered gathers from g only what one caller may see: a series with a
// namespace label when keep(namespace), a series without one when global
// (process, Go runtime, cycle timings, preemption totals). Families left
// empty are dropped.
func Filtered(g prometheus.Gatherer, keep func(ns string) bool, global bool) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		out := make([]*dto.MetricFamily, 0, len(mfs))
		for _, mf := range mfs {
			kept := mf.Metric[:0:0]
			for _, m := range mf.Metric {
				ns, tenant := namespaceOf(m)
				if (tenant && keep(ns)) || (!tenant && global) {
					kept = append(kept, m)
				}
			}
			if len(kept) > 0 {
				mf.Metric = kept
				out = append(out, mf)
			}
		}
		return out, err
	})
}

// namespaceOf returns the series' namespace label, if it has one.
func namespaceOf(m *dto.Metric) (string, bool) {
	for _, l := range m.GetLabel() {
		if l.GetName() == namespaceLabel {
			return l.GetValue(), true
		}
	}
	return "", false
}
