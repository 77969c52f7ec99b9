package engine

import (
	"fmt"
	"time"
)

// gangTimeouts requeues admitted jobs whose allocations have not all
// started within the gang timeout, so partial placements never linger.
// Their live allocations leave their tenant's usage: the requeue stops
// them.
func (cy *cycle) gangTimeouts(jobs []*Job) {
	if cy.cfg.GangTimeout <= 0 {
		return
	}
	for _, j := range jobs {
		acct := cy.accts[j.Namespace]
		if acct == nil || j.State != Admitted || j.NoGang || j.Dead || j.AdmittedAt.IsZero() {
			continue
		}
		waited := cy.s.Now.Sub(j.AdmittedAt)
		if waited <= cy.cfg.GangTimeout {
			continue
		}
		started, want := cy.started(j)
		if started >= want {
			continue
		}
		reason := fmt.Sprintf("gang timeout: only %d of %d allocations started %s after admission (timeout %s); requeued",
			started, want, waited.Round(time.Second), cy.cfg.GangTimeout)
		cy.requeue(j, reason, CauseGangTimeout, "", 0)
		for _, a := range cy.byJob[idOf(j)] {
			if a.Live {
				acct.sub(allocVector(a))
			}
		}
	}
}

// started counts the job's allocations that left pending, and how many
// it wants in all.
// Only allocations that count as placed for the job's current version
// count (placementOf): a finished allocation of an earlier run does not.
func (cy *cycle) started(j *Job) (started, want int) {
	for i := range j.Groups {
		want = satAdd(want, cy.want(j, i))
	}
	return cy.placementOf(j).started, want
}

// requeue decides to stop job j and queue it again, and marks it so the
// rest of the cycle treats it as gone.
func (cy *cycle) requeue(j *Job, reason, cause, preemptor string, lost time.Duration) {
	cy.pre.requeued[j.Key()] = true
	cy.decide(j, Requeue, reason)
	d := &cy.plan.Decisions[len(cy.plan.Decisions)-1]
	d.Cause, d.Preemptor, d.LostWork = cause, preemptor, lost
	if v := cy.verdict(j); v != nil {
		v.State, v.Reason = Queued, reason
	}
}

// stopVictim decides to stop dispatched victim j for good (Stop) and
// marks it gone for the rest of the cycle, like requeue.
func (cy *cycle) stopVictim(j *Job, reason, cause, preemptor string, lost time.Duration) {
	cy.pre.requeued[j.Key()] = true
	cy.decide(j, Stop, reason)
	d := &cy.plan.Decisions[len(cy.plan.Decisions)-1]
	d.Cause, d.Preemptor, d.LostWork = cause, preemptor, lost
	if v := cy.verdict(j); v != nil {
		v.State, v.Reason = Stopped, reason
	}
}

// backoff is how long requeued job j still has to wait before it may be
// admitted again: base·2^(requeues-1) from its last requeue, at most cap.
func (cy *cycle) backoff(j *Job) time.Duration {
	base := cy.cfg.BackoffBase
	if j.Requeues <= 0 || base <= 0 || j.RequeuedAt.IsZero() {
		return 0
	}
	d := base
	for i := 1; i < j.Requeues && i < 40 && (cy.cfg.BackoffCap <= 0 || d < cy.cfg.BackoffCap); i++ {
		d *= 2
	}
	if cy.cfg.BackoffCap > 0 && d > cy.cfg.BackoffCap {
		d = cy.cfg.BackoffCap
	}
	return j.RequeuedAt.Add(d).Sub(cy.s.Now)
}

// checkBackoff fails while a requeued job backs off.
func (cy *cycle) checkBackoff(j *Job) (Check, bool) {
	left := cy.backoff(j)
	if left <= 0 {
		return Check{}, false
	}
	return Check{Name: "backoff", Detail: fmt.Sprintf("requeued %d times; backs off for %s more before it may be admitted again",
		j.Requeues, left.Round(time.Second))}, true
}
