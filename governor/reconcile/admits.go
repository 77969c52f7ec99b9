package reconcile

import (
	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/engine"
)

// reserveAdmits records the plan's admissions of held jobs in the store
// as reservations, so that proxy admissions decided while the cycle
// writes to Nomad count them (r.mu held). It returns each reserved key
// with the job the store held before.
func (r *Reconciler) reserveAdmits(snap *engine.Snapshot, plan *engine.Plan) map[string]pendingAdmit {
	type ref struct{ ns, id string }
	admits := map[ref]bool{}
	for _, d := range plan.Decisions {
		if d.Action == engine.Admit {
			admits[ref{d.Namespace, d.JobID}] = true
		}
	}
	pending := map[string]pendingAdmit{}
	if len(admits) == 0 {
		return pending // most cycles over a held queue: no scan of its jobs
	}
	for _, j := range snap.Jobs {
		if !admits[ref{j.Namespace, j.ID}] || j.State != engine.Queued {
			continue
		}
		admitted := *j
		admitted.State = engine.Admitted
		pending[j.Key()] = pendingAdmit{ns: j.Namespace, id: j.ID, prev: r.Store.PutEngineJob(&admitted)}
	}
	if len(pending) > 0 {
		r.dropBase()
	}
	return pending
}

// releaseUnapplied gives back the reservations of admissions Nomad did not
// take (a conflict, an error), unless the store holds a newer version of
// the job by now (r.mu held).
func (r *Reconciler) releaseUnapplied(pending map[string]pendingAdmit, res actuate.Result) {
	for _, d := range res.Applied {
		if d.Action == engine.Admit {
			delete(pending, d.Namespace+"/"+d.JobID)
		}
	}
	for key, p := range pending {
		if cur, ok := r.Store.Job(p.ns, p.id); ok && !cur.Reserved {
			continue
		}
		r.Store.RestoreEngineJob(key, p.prev)
		r.dropBase()
	}
}

// pendingAdmit is a cycle's admission reserved in the store while the
// cycle writes it, with the job the store held before.
type pendingAdmit struct {
	ns, id string
	prev   *engine.Job
}
