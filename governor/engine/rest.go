package engine

import "time"

// Requeue rest (issue 14, round 12): the victim a preemption picks is the
// cheapest, and the cheapest is the job that lost least, which is most
// often the one that was just requeued and admitted again: it has not run
// long since. Measured on the simulator's standard scenario (load 1.2,
// seed 2), 77 % of the preemptions of a week hit jobs preempted four
// times or more, one of them 54 times (103 with two-minute stops): a low
// job taken again and again, half the time by its own tenant's higher
// classes. With
// Config.RequeueRest a requeued job rests after it is admitted again:
// only a reclaim by another tenant (the nominal quota's promise) may take
// it until the rest is over. The rest doubles with every requeue, as the
// back-off does, up to RequeueRestMax. Fewer restarts cost more work lost
// by the victims taken instead (docs/simulator.md, round 12): off by
// default.

// RequeueRestMax bounds a requeued job's rest.
const RequeueRestMax = time.Hour

// restOf is how long a job requeued n times rests after it is admitted
// again (Config.RequeueRest·2^(n−1), at most RequeueRestMax); zero when
// it never was or rest is off.
func (c Config) restOf(n int) time.Duration {
	if c.RequeueRest <= 0 || n <= 0 {
		return 0
	}
	d := c.RequeueRest
	for i := 1; i < n && d < RequeueRestMax; i++ {
		d *= 2
	}
	if d > RequeueRestMax {
		d = RequeueRestMax
	}
	return d
}

// resting tells whether victim v still rests: it was requeued before and
// its current run began (admission, or its newest allocation's start when
// later) less than its rest ago.
func (cy *cycle) resting(v *victim) bool {
	rest := cy.cfg.restOf(v.j.Requeues)
	if rest <= 0 {
		return false
	}
	since := v.j.AdmittedAt
	if v.newest.After(since) {
		since = v.newest
	}
	return cy.s.Now.Sub(since) < rest
}
