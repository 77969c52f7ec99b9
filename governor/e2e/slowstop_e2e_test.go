//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
)

// TestE2E_SlowStopReclaimsOnce: a preemptor waiting for a victim that is
// slow to stop keeps its claim, so its tenant's next job does not reclaim
// again on the strength of the same quota. team-a (nominal 2 GPUs)
// borrows all 8; team-b (nominal 4) submits b1 (4 GPUs), which reclaims
// team-a's 4-GPU trainer. That trainer ignores the checkpoint signal and
// SIGTERM, so it stops only when Nomad kills it (checkpoint timeout, then
// kill_timeout: about 30 s). Meanwhile team-b submits b2 (2 GPUs): with
// b1's claim team-b would exceed its nominal quota, so b2 reclaims
// nothing. Without the claim (before 48fa8e7) team-b looked idle while b1
// waited, and b2 reclaimed a second victim: team-b ended above its
// nominal and team-a below.
func TestE2E_SlowStopReclaimsOnce(t *testing.T) {
	e := newPreemptEnv(t)
	e.namespace("team-a", map[string]string{"allot.quota.gpu": "2", "allot.limit.gpu": "8"})
	e.namespace("team-d", map[string]string{"allot.quota.gpu": "2"}) // idle: lends its 2
	e.c.Eventually(30*time.Second, "the governor reads team-a's nominal 2 GPUs and team-d", func() error {
		return tenantQuotas(e.gov, map[string]int64{"team-a": 2, "team-b": 4, "team-d": 2})
	})

	slow := []string{"-step-time", "200ms", "-ignore-signals"}
	e.train("team-a", "a1", "low", 1, 4, slow...)
	e.train("team-a", "a2", "low", 1, 2, slow...)
	e.train("team-a", "a3", "low", 1, 2, slow...)
	for _, id := range []string{"a1", "a2", "a3"} {
		e.runningAllocs("team-a", id, 1, 60*time.Second, nil)
	}

	e.train("team-b", "b1", "standard", 1, 4, "-step-time", "200ms")
	e.awaitOnePreemption("team-b", "b1", "reclaim")

	e.train("team-b", "b2", "standard", 1, 2, "-step-time", "200ms")
	// b1 runs once its victim is gone; every cycle until then (about 30,
	// one a second) decided about b2.
	e.runningAllocs("team-b", "b1", 1, 90*time.Second, nil)
	all := e.preemptionsBy("team-b")
	must.SliceLen(t, 1, all, must.Sprintf("team-b reclaimed once while its first preemptor waited: %+v", all))
	w := e.why("team-b", "b2")
	must.Eq(t, "queued", w.State, must.Sprint(w.Reason))
	must.StrNotContains(t, w.Reason, "preempting", must.Sprint("b2 would take team-b above its nominal quota"))
	t.Logf("b2 waits: %s", w.Reason)
}

// preemptionsBy returns the preemption decisions whose preemptor is in
// namespace ns.
func (e *preemptEnv) preemptionsBy(ns string) []allotapi.Decision {
	var out []allotapi.Decision
	for _, d := range e.decisions() {
		if d.Kind == "preemption" && d.Namespace == ns {
			out = append(out, d)
		}
	}
	return out
}

// awaitOnePreemption waits for the first preemption by a preemptor in
// namespace ns, checks that it is the only one, by job, of cause, and
// returns it.
func (e *preemptEnv) awaitOnePreemption(ns, job, cause string) allotapi.Decision {
	e.t.Helper()
	p := e.awaitPreemptions(ns, 1)
	must.SliceLen(e.t, 1, p)
	must.Eq(e.t, job, p[0].JobID)
	must.Eq(e.t, cause, p[0].Cause)
	return p[0]
}

// awaitPreemptions waits (30 s at most) until preemptors in namespace
// ns have made n preemptions, and returns them all.
func (e *preemptEnv) awaitPreemptions(ns string, n int) []allotapi.Decision {
	e.t.Helper()
	var out []allotapi.Decision
	e.c.Eventually(30*time.Second, fmt.Sprintf("%d preemptions by %s", n, ns), func() error {
		if out = e.preemptionsBy(ns); len(out) < n {
			return fmt.Errorf("%d so far", len(out))
		}
		return nil
	})
	return out
}

// tenantQuotas fails unless the governor shows each tenant with its GPU
// quota.
func tenantQuotas(gov *allotapi.Client, want map[string]int64) error {
	ts, err := gov.Tenants(context.Background())
	if err != nil {
		return err
	}
	got := map[string]int64{}
	for _, tn := range ts.Tenants {
		got[tn.Namespace] = tn.Quota["gpu"]
	}
	for ns, q := range want {
		if got[ns] != q {
			return fmt.Errorf("tenant %s quota %d, want %d (all: %v)", ns, got[ns], q, got)
		}
	}
	return nil
}
