package proxy

import (
	"fmt"
	"net/http"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// periodicForce admits the child a forced launch of a periodic job
// creates now: refused with 409 and the reason when it would not be
// admitted now (nothing is launched). Nomad reads no body on this route:
// namespace and region come from the query only. The reservation is
// released once Nomad answers; the child arrives by its own event and is
// governed like any job of its namespace. It never pins: Nomad creates
// the child from the parent, which the governor never pins (its children
// would all inherit the pin: cluster's NoPin).
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
	parent, err := p.current(r, t.Namespace, id)
	if err == errNotFound {
		return p.passOn(w, r, body)
	}
	if err != nil {
		return err
	}
	if parent.State != engine.Stopped {
		return p.passOn(w, r, body) // not a parent: Nomad refuses it
	}
	if _, _, err := p.classOf(t.Namespace, map[string]string{jobmeta.Class: parent.Class}); err != nil {
		return err
	}
	return p.admitAndForward(w, r, admission{ns: t.Namespace, t: &t, what: fmt.Sprintf("launching a child of %s/%s now", t.Namespace, id),
		cand: childOf(parent, id+"/periodic-pending"), body: unchanged(body)})
}
