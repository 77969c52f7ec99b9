package engine

// Base is the accounted state of a snapshot without its queue: tenant
// usage and free capacity after everything that runs or is admitted, and
// after jobs registered straight to Nomad over a limit were held. The
// proxy decides single submissions against it, so a submission's cost does
// not grow with the queue; a Base is reused until the cluster changes.
type Base struct {
	cy *cycle
	// records holds the requeue record (allot.requeues, requeued-at,
	// preempted-by) of every job of the snapshot that has one, queued
	// jobs included, by "ns/id".
	records map[string]*Job
}

// Prepare accounts snapshot s (its queued jobs are ignored: they hold
// nothing).
func Prepare(cfg Config, s *Snapshot) *Base {
	jobs := make([]*Job, 0, len(s.Jobs))
	records := map[string]*Job{}
	for _, j := range s.Jobs {
		if j.Requeues > 0 || j.PreemptedBy != "" {
			records[j.Key()] = j
		}
		if j.State != Queued {
			jobs = append(jobs, j)
		}
	}
	cp := *s
	cp.Jobs = jobs
	cy := newCycle(cfg, &cp)
	cy.prepare(sortedJobs(jobs))
	return &Base{cy: cy, records: records}
}

// Decide checks job j as if it were queued now, like a cycle would. With
// commit, an admitted job keeps its usage and capacity in the base (the
// caller records it as admitted); without, the base is left unchanged.
//
// A resubmitted job backs off like a requeued job in the queue: the
// requeue record is the stored job's when j carries a weaker one (audit
// #18). An update is weighed by what it adds on top of what it keeps: the
// live allocations whose shape it changes are released before the checks
// (audit #12), and Verdict.Replaces counts them.
func (b *Base) Decide(j *Job, commit bool) Verdict {
	cy := b.cy
	v := Verdict{Namespace: j.Namespace, JobID: j.ID, Class: cy.className(j), State: Queued, QueuedAt: j.QueuedAt}
	acct := cy.accts[j.Namespace]
	if acct == nil {
		v.State, v.Reason = Admitted, "namespace "+j.Namespace+" is not governed"
		return v
	}
	if c, wait := cy.checkBackoff(b.withRecord(j)); wait {
		v.Checks, v.Reason = []Check{c}, c.Name+": "+c.Detail
		return v
	}
	p := cy.placementOf(j)
	replaced := p.replaced
	v.Replaces = len(replaced)
	cy.releaseReplaced(j, replaced)
	cy.last = admission{}
	v.Checks = cy.checks(j, acct)
	if failed := firstFailed(v.Checks); failed != nil {
		v.Reason = failed.Name + ": " + failed.Text()
		cy.restoreReplaced(j, replaced)
		return v
	}
	v.State, v.Reason = Admitted, admitReason(v.Checks)
	v.Nodes = cy.pinOf(j, p, cy.last.takes)
	if !commit {
		cy.cap.undo(cy.last.takes)
		acct.sub(cy.last.use)
		cy.restoreReplaced(j, replaced)
	}
	return v
}

// withRecord returns j with the stored job's requeue record when that one
// is stronger (more requeues, or a later requeue).
func (b *Base) withRecord(j *Job) *Job {
	rec, ok := b.records[j.Key()]
	if !ok || (rec.Requeues <= j.Requeues && !rec.RequeuedAt.After(j.RequeuedAt)) {
		return j
	}
	cp := *j
	cp.Requeues, cp.RequeuedAt, cp.PreemptedBy = rec.Requeues, rec.RequeuedAt, rec.PreemptedBy
	return &cp
}
