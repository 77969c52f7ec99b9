package engine

// Base is the accounted state of a snapshot without its queue: tenant
// usage and free capacity after everything that runs or is admitted, and
// after jobs registered straight to Nomad over a limit were held. The
// proxy decides single submissions against it, so a submission's cost does
// not grow with the queue; a Base is reused until the cluster changes.
type Base struct {
	cy *cycle
}

// Prepare accounts snapshot s (its queued jobs are ignored: they hold
// nothing).
func Prepare(cfg Config, s *Snapshot) *Base {
	jobs := make([]*Job, 0, len(s.Jobs))
	for _, j := range s.Jobs {
		if j.State != Queued {
			jobs = append(jobs, j)
		}
	}
	cp := *s
	cp.Jobs = jobs
	cy := newCycle(cfg, &cp)
	cy.prepare(sortedJobs(jobs))
	return &Base{cy: cy}
}

// Decide checks job j as if it were queued now, like a cycle would. With
// commit, an admitted job keeps its usage and capacity in the base (the
// caller records it as admitted); without, the base is left unchanged.
func (b *Base) Decide(j *Job, commit bool) Verdict {
	cy := b.cy
	v := Verdict{Namespace: j.Namespace, JobID: j.ID, Class: cy.className(j), State: Queued, QueuedAt: j.QueuedAt}
	acct := cy.accts[j.Namespace]
	if acct == nil {
		v.State, v.Reason = Admitted, "namespace "+j.Namespace+" is not governed"
		return v
	}
	cy.last = admission{}
	v.Checks = cy.checks(j, acct)
	if failed := firstFailed(v.Checks); failed != nil {
		v.Reason = failed.Name + ": " + failed.Text()
		return v
	}
	v.State, v.Reason = Admitted, admitReason(v.Checks)
	if !commit {
		cy.cap.undo(cy.last.takes)
		acct.usage.Sub(cy.last.use)
	}
	return v
}
