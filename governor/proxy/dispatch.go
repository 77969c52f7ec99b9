package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
)

// dispatch admits the child job a dispatch of a parameterized job would
// create. Nomad 1.6.1 cannot update a dispatched job through its HTTP API
// (it drops the read-only Dispatched flag when converting the job), so a
// child cannot be registered held: a dispatch that would not be admitted
// now is refused with 409 and the reason, and nothing is created. An
// admitted child's capacity is reserved until Nomad answers.
func (p *Proxy) dispatch(w http.ResponseWriter, r *http.Request, parentID string) error {
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = api.DefaultNamespace
	}
	if !p.governed(ns) {
		p.rp.ServeHTTP(w, r)
		return nil
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	parent, ok := p.store.Job(ns, parentID)
	if !ok {
		// Registered a moment ago: read it with the caller's token.
		if parent, ok = p.readJob(r, ns, parentID); !ok {
			p.rp.ServeHTTP(w, r)
			return nil
		}
	}
	child := *parent
	child.ID = parentID + "/dispatch-pending-" + fmt.Sprint(time.Now().UnixNano())
	child.State, child.QueuedAt = engine.Queued, time.Time{}
	v, undo := p.rec.Reserve(&child)
	if !v.Admitted {
		p.countSubmission(ns, v)
		msg := fmt.Sprintf("allot-governor: dispatching %s/%s is not admitted now (Nomad cannot hold a dispatched job, so nothing was created): %s\n", ns, parentID, v.Reason)
		http.Error(w, msg, http.StatusConflict)
		return nil
	}
	resp, data, err := p.forward(r, body)
	if err != nil || resp.StatusCode != http.StatusOK {
		undo()
	}
	if err != nil {
		return err
	}
	p.countSubmission(ns, v)
	reply(w, resp, data)
	return nil
}

// readJob reads job ns/id from Nomad with the caller's headers.
func (p *Proxy) readJob(r *http.Request, ns, id string) (*engine.Job, bool) {
	get := r.Clone(r.Context())
	get.Method = http.MethodGet
	get.URL.Path = "/v1/job/" + id
	get.URL.RawPath = ""
	get.URL.RawQuery = url.Values{"namespace": {ns}}.Encode()
	resp, data, err := p.forward(get, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, false
	}
	j, err := cluster.DecodeJob(data)
	if err != nil {
		return nil, false
	}
	return cluster.ConvertJob(j), true
}
