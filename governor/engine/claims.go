package engine

import "time"

// The claim clock: ReclaimMaxWait counts from when a queued job became a
// claim (its tenant within its nominal quota with the job, so its
// preemption is a reclaim), not from when it queued. A job queued for
// days as a borrower whose tenant's usage has just fallen is a claim of
// a moment; counted from its queued-at it took borrowers' long runs at
// once, thrown away for no fairness (docs/simulator.md, round 40).
//
// The engine is pure, so the clock travels with the caller: Plan.Claims
// holds, by "ns/id", when each job still queued after the plan became a
// claim, and the next cycle reads it back from Snapshot.Claims. A job
// stops being a claim when a cycle judges it one that is not (its
// tenant above its nominal with it), when it is admitted or leaves the
// queue, and when it is requeued; a cycle that does not judge it (its
// first failing check is not one preemption can help) carries its clock.

// markClaim records whether the cycle judged queued job j a claim.
func (cy *cycle) markClaim(j *Job, claim bool) {
	key := j.Key()
	cy.pre.judged[key] = true
	if !claim {
		delete(cy.pre.claims, key)
		return
	}
	if _, ok := cy.pre.claims[key]; !ok {
		cy.pre.claims[key] = cy.claimSince(j)
	}
}

// claimSince is when j became a claim: this cycle's record, else the
// snapshot's (carried), else now.
func (cy *cycle) claimSince(j *Job) time.Time {
	if since, ok := cy.pre.claims[j.Key()]; ok {
		return since
	}
	if since, ok := cy.carried(j); ok {
		return since
	}
	return cy.s.Now
}

// carried returns the snapshot's record of when j became a claim, when
// it is believable: not before j last queued, not in the future.
func (cy *cycle) carried(j *Job) (time.Time, bool) {
	since, ok := cy.s.Claims[j.Key()]
	if !ok || since.Before(waitingSince(j)) || since.After(cy.s.Now) {
		return time.Time{}, false
	}
	return since, true
}

// claimUntil is when claim j takes any borrower (reclaimWaited), as a
// reason writes it.
func (cy *cycle) claimUntil(j *Job) string {
	return cy.claimSince(j).Add(ReclaimMaxWait).UTC().Format(time.RFC3339)
}

// planClaims fills Plan.Claims: the claims the cycle judged, and the
// snapshot's for jobs it did not judge that are still queued and were
// not requeued since.
func (cy *cycle) planClaims() {
	out := make(map[string]time.Time, len(cy.pre.claims))
	for key, since := range cy.pre.claims {
		if cy.queuedJob(key) != nil {
			out[key] = since
		}
	}
	for key := range cy.s.Claims {
		if j := cy.queuedJob(key); j != nil && !cy.pre.judged[key] {
			if since, ok := cy.carried(j); ok {
				out[key] = since
			}
		}
	}
	if len(out) > 0 {
		cy.plan.Claims = out
	}
}

// queuedJob returns the job of key when the plan leaves it queued.
func (cy *cycle) queuedJob(key string) *Job {
	v := cy.plan.Verdicts[key]
	if v == nil || v.State != Queued {
		return nil
	}
	return cy.jobByID(v.Namespace, v.JobID)
}
