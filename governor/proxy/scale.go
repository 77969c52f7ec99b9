package proxy

import (
	"fmt"
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// scale admits a scale-up of a governed job: when the allocations it
// adds would not be admitted now, the request is refused with the reason
// and the job is left as it was. Scale-downs, count-less scaling events,
// and jobs that run nothing themselves (stopped, held, periodic and
// parameterized parents, which the governor weighs when they run) pass.
// A scale never pins: its body is Nomad's scaling request (no job spec to
// write a constraint into) and the job runs, so a pin could move running
// allocations; a pinned job keeps its pin, and when Nomad cannot place
// the added allocations on the pinned nodes (a blocked evaluation) the
// engine unpins it (engine.Unpin).
func (p *Proxy) scale(w http.ResponseWriter, r *http.Request, id string) error {
	body, err := p.readBody(r)
	if err != nil {
		return err
	}
	var req api.ScalingRequest
	first, err := decodeFirst(body, &req)
	if err != nil {
		return err
	}
	if j := req.Target["Job"]; j != "" && j != id {
		return badRequest("job ID in payload did not match URL")
	}
	// Nomad's jobScaleAction reads the namespace, region and token from
	// the query and headers only: the body's WriteRequest is ignored.
	t, err := p.resolve(r, writeFields{}, "", "")
	if err != nil {
		return err
	}
	if err := p.authorize(Scale, &t); err != nil {
		return err
	}
	if !p.governed(t.Namespace) || req.Count == nil {
		return p.passOn(w, r, body)
	}
	group := req.Target["Group"]
	if err := within(fmt.Sprintf("group %q count", group), *req.Count, MaxGroupCount); err != nil {
		return err
	}
	cur, err := p.current(r, t.Namespace, id)
	if err == errNotFound {
		return p.passOn(w, r, body)
	}
	if err != nil {
		return err
	}
	if cur.State == engine.Stopped || cur.State == engine.Queued || !grows(cur, group, int(*req.Count)) {
		return p.passOn(w, r, body) // runs nothing now, or does not grow
	}
	if _, _, err := p.classOf(t.Namespace, map[string]string{jobmeta.Class: cur.Class}); err != nil {
		return err
	}
	return p.admitAndForward(w, r, admission{ns: t.Namespace, t: &t, cand: cur, keep: true, body: unchanged(first),
		what: fmt.Sprintf("scaling %s/%s group %q to %d", t.Namespace, id, group, *req.Count)})
}

// grows sets group g of j (a copy) to count n and tells whether that
// grows it.
func grows(j *engine.Job, g string, n int) bool {
	for i := range j.Groups {
		if j.Groups[i].Name == g && n > j.Groups[i].Count {
			j.Groups[i].Count = n
			return true
		}
	}
	return false
}
