package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/cluster"
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
// real child under its own ID.
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

	parent, err := p.storedJob(r, t.Namespace, parentID)
	if err == errNotFound {
		return p.passOn(w, r, body) // Nomad answers
	}
	if err != nil {
		return err
	}
	if !parent.IsParameterized() {
		return p.passOn(w, r, body) // Nomad refuses it
	}
	if err := dispatchMeta(req.Meta, parent.Meta); err != nil {
		return err
	}
	child := childOf(parent, req.Meta)
	if _, _, err := p.classOf(t.Namespace, child.Meta); err != nil {
		return err
	}
	cand := cluster.ConvertJob(child)
	cand.ID = parentID + "/dispatch-pending-" + fmt.Sprint(time.Now().UnixNano())
	return p.admitAndForward(w, r, admission{ns: t.Namespace, what: fmt.Sprintf("dispatching %s/%s", t.Namespace, parentID),
		why: " (Nomad cannot hold a dispatched job)", cand: cand, body: unchanged(first),
		done: func(_ reconcile.Verdict, data []byte) []byte { p.rememberChild(child, data); return data }})
}

// dispatchMeta refuses dispatch meta the child must not carry: a
// governor-owned key, or a class other than the parent's (the child runs
// at the parent's Priority, which the parent's class set).
func dispatchMeta(meta, parent map[string]string) error {
	for k, v := range meta {
		switch {
		case jobmeta.Owned(k):
			return badRequest(fmt.Sprintf("dispatch meta key %q belongs to the governor", k))
		case k == jobmeta.Class && v != parent[jobmeta.Class]:
			return badRequest(fmt.Sprintf("a dispatch cannot change the class (%q): the child runs at its parent's priority; register a parent of that class", v))
		}
	}
	return nil
}

// childOf is the child Nomad's Job.Dispatch creates from parent: the
// parent's spec, not parameterized, dispatched, with the dispatch meta
// merged over the parent's.
func childOf(parent *api.Job, meta map[string]string) *api.Job {
	child := *parent
	child.ParameterizedJob, child.Dispatched, child.ParentID = nil, true, parent.ID
	child.Meta = make(map[string]string, len(parent.Meta)+len(meta))
	for k, v := range parent.Meta {
		child.Meta[k] = v
	}
	for k, v := range meta {
		child.Meta[k] = v
	}
	child.Meta = jobmeta.StripOwned(child.Meta)
	return &child
}

// rememberChild lets the store see the child Nomad created (until its
// own event, which is newer, replaces it).
func (p *Proxy) rememberChild(child *api.Job, data []byte) {
	var resp api.JobDispatchResponse
	if json.Unmarshal(data, &resp) != nil || resp.DispatchedJobID == "" {
		return
	}
	j := *child
	j.ID, j.Name = &resp.DispatchedJobID, &resp.DispatchedJobID
	j.JobModifyIndex = &resp.JobCreateIndex
	now := time.Now().UnixNano()
	j.SubmitTime = &now
	p.store.UpsertJob(&j)
}
