package reconcile

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/metrics"
)

// TestUnpinsAreCounted: an applied unpin counts in
// allot_unpinned_jobs_total by namespace, as holds, admissions and
// requeues count in theirs; an unpin Nomad's check-and-set refused
// (blocked) or that was never applied counts for nothing.
func TestUnpinsAreCounted(t *testing.T) {
	m := metrics.New()
	r := &Reconciler{Metrics: m}
	unpin := func(ns, id string) engine.Decision {
		return engine.Decision{Action: engine.Unpin, Namespace: ns, JobID: id, Cause: "blocked", Reason: "blocked in Nomad"}
	}
	plan := &engine.Plan{Decisions: []engine.Decision{unpin("a", "p1"), unpin("a", "p2"), unpin("b", "p3"), unpin("c", "p4")}}
	r.observeResult(plan, actuate.Result{
		Applied: []engine.Decision{unpin("a", "p1"), unpin("a", "p2"), unpin("b", "p3"),
			{Action: engine.Hold, Namespace: "c", JobID: "h"}},
		Blocked: []actuate.Blocked{{Decision: unpin("c", "p4")}},
	})
	must.Eq(t, 2.0, testutil.ToFloat64(m.Unpinned.WithLabelValues("a")))
	must.Eq(t, 1.0, testutil.ToFloat64(m.Unpinned.WithLabelValues("b")))
	must.Eq(t, 0.0, testutil.ToFloat64(m.Unpinned.WithLabelValues("c")))
	must.Eq(t, 1.0, testutil.ToFloat64(m.HeldTotal.WithLabelValues("c", "direct")))
}
