package proxy

import (
	"fmt"
	"net/http"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/reconcile"
)

// admission is one admit-then-forward step. Register, scale, dispatch,
// revert and periodic force differ only in these parameters.
type admission struct {
	// ns is the namespace Nomad will use; what names the request in a
	// refusal ("dispatching ml/param").
	ns, what string
	// t is the authorized caller: reasons answered to it are redacted.
	t *target
	// why is added to the reason of a refusal.
	why string
	// cand is what would run: the job, or the allocations the request adds
	// under a pending key of their own.
	cand *engine.Job
	// body returns the request body to send when admitted (in pieces).
	body func(reconcile.Verdict) ([][]byte, error)
	// hold, when set, returns the body that writes the request held in the
	// queue when it is not admitted now; nil refuses it (409 with the
	// reason) and nothing reaches Nomad.
	hold func(reconcile.Verdict) ([][]byte, error)
	// keep leaves the reservation in the store once Nomad accepted, until
	// the job's own event replaces it (register, scale: same key); without
	// it the reservation is released as soon as Nomad answers (dispatch,
	// revert, periodic force: the real job arrives under its own key).
	keep bool
	// done runs once Nomad accepted the request, after the reservation is
	// released unless kept; it returns the answer's body.
	done func(v reconcile.Verdict, data []byte) []byte
}

// admitAndForward reserves a.cand, sends the request Nomad will accept
// or refuses it, and releases or keeps the reservation once Nomad
// answered: nothing is left reserved for a request Nomad refused.
func (p *Proxy) admitAndForward(w http.ResponseWriter, r *http.Request, a admission) error {
	v, undo := p.rec.Reserve(a.cand)
	v.Reason = a.t.Redact(v.Reason)
	build := a.body
	if !v.Admitted {
		build = a.hold
	}
	if build == nil {
		if p.metrics != nil {
			p.metrics.Submissions.WithLabelValues(a.ns, "refused").Inc()
		}
		return refuse(http.StatusConflict, fmt.Sprintf("%s is not admitted now (nothing was changed): %s%s", a.what, v.Reason, a.why))
	}
	pieces, err := build(v)
	if err != nil {
		undo()
		return err
	}
	resp, data, err := p.forward(r, pieces...)
	if err != nil || resp.StatusCode != http.StatusOK || !a.keep {
		undo()
	}
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusOK {
		p.countSubmission(a.ns, v)
		if a.done != nil {
			data = a.done(v, data)
		}
	}
	reply(w, resp, data)
	return nil
}

// unchanged sends the request's body as received (its first JSON value).
func unchanged(first []byte) func(reconcile.Verdict) ([][]byte, error) {
	return func(reconcile.Verdict) ([][]byte, error) { return [][]byte{first}, nil }
}

func (p *Proxy) countSubmission(ns string, v reconcile.Verdict) {
	if p.metrics == nil {
		return
	}
	if v.Admitted {
		p.metrics.Submissions.WithLabelValues(ns, "admitted").Inc()
		p.metrics.AdmittedTotal.WithLabelValues(ns, "proxy").Inc()
		return
	}
	p.metrics.Submissions.WithLabelValues(ns, "queued").Inc()
	p.metrics.HeldTotal.WithLabelValues(ns, "proxy").Inc()
}
