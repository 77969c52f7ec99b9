package engine

import "time"

// The take-back memory: a tenant never takes back, for fairness, from a
// tenant whose preemptions requeued its jobs within reclaimWindow
// (lostTo). The jobs' allot.preempted-by names each victim's preemptors
// but dates only the latest (allot.requeued-at), so a victim that was
// admitted again and preempted by a third tenant within the window
// forgot the first: the extended property runs found tenants taking
// from each other 15-35 s apart that way
// (TestPropertyFairSharePreemptionNoPingPong).
//
// The engine is pure, so the memory travels with the caller, as the
// claim clock does (claims.go): Plan.Taken holds, by victim tenant and
// preemptor tenant, when the preemptor's latest preemption within
// reclaimWindow requeued the victim's jobs, and the next cycle reads it
// back from Snapshot.Taken. A caller that does not carry it (a governor
// that just became leader) falls back on the jobs' meta alone.

// noteTaken records that a preemption by tenant by requeues jobs of
// tenant ns now.
func (cy *cycle) noteTaken(ns, by string) {
	if ns == by {
		return
	}
	if cy.pre.taken == nil {
		cy.pre.taken = map[string]map[string]time.Time{}
	}
	if cy.pre.taken[ns] == nil {
		cy.pre.taken[ns] = map[string]time.Time{}
	}
	cy.pre.taken[ns][by] = cy.s.Now
}

// carriedTaken returns the snapshot's records still within reclaimWindow
// and not in the future, by victim tenant and preemptor tenant.
func (cy *cycle) carriedTaken() map[string]map[string]time.Time {
	out := map[string]map[string]time.Time{}
	for ns, bys := range cy.s.Taken {
		for by, at := range bys {
			if ns == by || at.After(cy.s.Now) || cy.s.Now.Sub(at) > reclaimWindow {
				continue
			}
			if out[ns] == nil {
				out[ns] = map[string]time.Time{}
			}
			out[ns][by] = at
		}
	}
	return out
}

// planTaken hands the carried records still within reclaimWindow and
// this plan's preemptions to the next cycle (Plan.Taken).
func (cy *cycle) planTaken() {
	out := cy.carriedTaken()
	for ns, bys := range cy.pre.taken {
		for by, at := range bys {
			if out[ns] == nil {
				out[ns] = map[string]time.Time{}
			}
			out[ns][by] = at
		}
	}
	if len(out) > 0 {
		cy.plan.Taken = out
	}
}
