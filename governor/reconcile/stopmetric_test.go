package reconcile

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/metrics"
)

// TestStopsAreCounted: an applied Stop counts in allot_stopped_jobs_total
// by namespace and a reason from a fixed set, as unpins, holds and
// requeues count in theirs; a Stop Nomad's check-and-set refused
// (blocked) or that was never applied counts for nothing.
func TestStopsAreCounted(t *testing.T) {
	m := metrics.New()
	r := &Reconciler{Metrics: m}
	stop := func(ns, id, cause, preemptor string) engine.Decision {
		return engine.Decision{Action: engine.Stop, Namespace: ns, JobID: id, Cause: cause, Preemptor: preemptor, Reason: "stopped"}
	}
	applied := []engine.Decision{
		stop("a", "run-1", engine.CauseMaxRuntime, ""),
		stop("a", "run-2", engine.CauseMaxRuntime, ""),
		stop("a", "p/dispatch-1", "", ""),
		stop("b", "p/dispatch-2", CauseClass, ""),
		stop("b", "p/dispatch-3", CausePriority, ""),
		stop("b", "p/dispatch-4", engine.CauseReclaim, "a/big"),
		stop("b", "p/dispatch-5", engine.CausePriority, "b/urgent"),
		stop("b", "p/dispatch-6", "a cause no table lists", ""),
		{Action: engine.Requeue, Namespace: "c", JobID: "victim", Cause: engine.CauseReclaim, Preemptor: "a/big"},
	}
	blocked := stop("c", "blocked", engine.CauseMaxRuntime, "")
	unapplied := stop("c", "conflict", engine.CauseMaxRuntime, "")
	plan := &engine.Plan{Decisions: append(append([]engine.Decision{}, applied...), blocked, unapplied)}
	r.observeResult(plan, actuate.Result{Applied: applied, Blocked: []actuate.Blocked{{Decision: blocked}}, Conflicts: 1})
	must.Eq(t, 6, testutil.CollectAndCount(m.Stopped), must.Sprint("one series per namespace and reason, none for c"))

	for _, c := range []struct {
		ns, reason string
		want       float64
	}{
		{"a", "max-runtime", 2}, {"a", "over-limit", 1},
		{"b", "class", 1}, {"b", "priority", 1}, {"b", "preemption", 2}, {"b", "other", 1},
		{"c", "max-runtime", 0},
	} {
		must.Eq(t, c.want, testutil.ToFloat64(m.Stopped.WithLabelValues(c.ns, c.reason)), must.Sprintf("%s %s", c.ns, c.reason))
	}
	must.Eq(t, 1.0, testutil.ToFloat64(m.Preemptions.WithLabelValues(engine.CauseReclaim)), must.Sprint("a requeue is no stop"))
}
