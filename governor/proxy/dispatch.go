package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/reconcile"
)

// dispatchRequest mirrors Nomad 1.6.1's structs.JobDispatchRequest, the
// type Nomad decodes a dispatch body into.
type dispatchRequest struct {
	JobID   string
	Payload []byte
	Meta    map[string]string
	nomadWrite
	IdPrefixTemplate string
}

// dispatch admits the child job a dispatch of a parameterized job would
// create. Nomad 1.6.1 cannot update a dispatched job through its HTTP API
// (it drops the read-only Dispatched flag when converting the job), so a
// child cannot be registered held: a dispatch that would not be admitted
// now is refused with 409 and the reason, and nothing is created. The
// child's reservation lasts until Nomad answers; then the store sees the
// real child under its own ID. A dispatch never pins: Nomad creates the
// child from the parent, which the governor never pins (cluster's NoPin),
// and cannot update a dispatched child.
func (p *Proxy) dispatch(w http.ResponseWriter, r *http.Request, parentID string) error {
	body, err := p.readBody(r)
	if err != nil {
		return err
	}
	var req dispatchRequest
	first, err := decodeFirst(body, &req)
	if err != nil {
		return err
	}
	if req.JobID != "" && req.JobID != parentID {
		return badRequest("Job ID does not match")
	}
	t, err := p.resolve(r, req.fields(), "", "")
	if err != nil {
		return err
	}
	if err := p.authorize(Dispatch, &t); err != nil {
		return err
	}
	if !p.governed(t.Namespace) {
		return p.passOn(w, r, body)
	}

	parent, err := p.current(r, t.Namespace, parentID)
	if err == errNotFound {
		return p.passOn(w, r, body) // Nomad answers
	}
	if err != nil {
		return err
	}
	if parent.State != engine.Stopped {
		return p.passOn(w, r, body) // not a parent: Nomad refuses it
	}
	if err := dispatchMeta(req.Meta, parent.Class); err != nil {
		return err
	}
	if _, _, err := p.classOf(t.Namespace, map[string]string{jobmeta.Class: parent.Class}); err != nil {
		return err
	}
	cand := childOf(parent, parentID+"/dispatch-pending-"+fmt.Sprint(time.Now().UnixNano()))
	cand.Dispatched = true
	return p.admitAndForward(w, r, admission{ns: t.Namespace, t: &t, what: fmt.Sprintf("dispatching %s/%s", t.Namespace, parentID),
		why: " (Nomad cannot hold a dispatched job)", cand: cand, body: unchanged(first),
		done: func(_ reconcile.Verdict, data []byte) []byte { p.rememberChild(cand, data); return data }})
}

// dispatchMeta refuses dispatch meta the child must not carry: a
// governor-owned key, or a class other than the parent's (the child runs
// at the parent's Priority, which the parent's class set).
func dispatchMeta(meta map[string]string, parentClass string) error {
	for k, v := range meta {
		switch {
		case jobmeta.Owned(k):
			return badRequest(fmt.Sprintf("dispatch meta key %s belongs to the governor", jobmeta.Quote(k)))
		case k == jobmeta.Class && v != parentClass:
			return badRequest(fmt.Sprintf("a dispatch cannot change the class (%s): the child runs at its parent's priority; register a parent of that class", jobmeta.Quote(v)))
		}
	}
	return nil
}

// childOf is what a child of parent (dispatched, or launched by a
// periodic force) asks for, under ID id: the parent's spec, not yet
// admitted, with no governor record (Nomad copies the parent's meta, and
// the parent carries none of the governor's keys).
func childOf(parent *engine.Job, id string) *engine.Job {
	c := *parent
	c.ID, c.State, c.Dispatched = id, engine.Queued, false
	c.QueuedAt, c.AdmittedAt, c.RequeuedAt, c.Requeues, c.PreemptedBy = time.Time{}, time.Time{}, time.Time{}, 0, ""
	c.StoppedByUser, c.Dead, c.Reserved = false, false, false
	c.Groups = append([]engine.Group(nil), parent.Groups...)
	return &c
}

// rememberChild lets the store see the child Nomad created under its own
// ID, unless its own event came first.
func (p *Proxy) rememberChild(cand *engine.Job, data []byte) {
	var resp api.JobDispatchResponse
	if json.Unmarshal(data, &resp) != nil || resp.DispatchedJobID == "" {
		return
	}
	if _, ok := p.store.Job(cand.Namespace, resp.DispatchedJobID); ok {
		return
	}
	c := *cand
	c.ID, c.State, c.Version = resp.DispatchedJobID, engine.Direct, resp.JobCreateIndex
	c.SubmittedAt = time.Now().UTC()
	p.store.PutEngineJob(&c)
}
