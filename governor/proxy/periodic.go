package proxy

import (
	"fmt"
	"net/http"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
)

// periodicForce admits the child a forced launch of a periodic job
// creates now: refused with 409 and the reason when it would not be
// admitted now (nothing is launched). Nomad reads no body on this route:
// namespace and region come from the query only. The reservation is
// released once Nomad answers; the child arrives by its own event and is
// governed like any job of its namespace.
func (p *Proxy) periodicForce(w http.ResponseWriter, r *http.Request, id string) error {
	body, err := p.readBody(r)
	if err != nil {
		return err
	}
	t, err := p.resolve(r, writeFields{}, "", "")
	if err != nil {
		return err
	}
	if err := p.authorize(PeriodicForce, &t); err != nil {
		return err
	}
	if !p.governed(t.Namespace) {
		return p.passOn(w, r, body)
	}
	parent, err := p.storedJob(r, t.Namespace, id)
	if err == errNotFound {
		return p.passOn(w, r, body)
	}
	if err != nil {
		return err
	}
	if !parent.IsPeriodic() || (parent.Stop != nil && *parent.Stop) {
		return p.passOn(w, r, body) // Nomad refuses or launches nothing
	}
	child := childOf(parent, nil)
	child.Periodic, child.Dispatched = nil, false
	if _, _, err := p.classOf(t.Namespace, child.Meta); err != nil {
		return err
	}
	cand := cluster.ConvertJob(child)
	cand.ID, cand.State = id+"/periodic-pending", engine.Queued
	return p.admitAndForward(w, r, admission{ns: t.Namespace, what: fmt.Sprintf("launching a child of %s/%s now", t.Namespace, id),
		cand: cand, body: unchanged(body)})
}
