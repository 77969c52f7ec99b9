package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
)

// revertRequest mirrors Nomad 1.6.1's structs.JobRevertRequest, the type
// Nomad decodes a revert body into.
type revertRequest struct {
	JobID               string
	JobVersion          uint64
	EnforcePriorVersion *uint64
	ConsulToken         string
	VaultToken          string
	nomadWrite
}

// revert admits the version a revert would restore. Nomad re-registers
// that version's spec (its Stop flag and allot.* meta included) as a new
// version, so a revert could otherwise start a held job or grow an
// admitted one past its tenant's limit. A revert to a stopped or held
// version runs nothing and passes; one that would not be admitted now is
// refused with 409 and the reason, and Nomad never sees it.
//
// The target version is weighed on top of what the job runs now: the
// worst moment of a destructive update, when Nomad places the new
// allocations before the old ones are gone. The reservation is released
// once Nomad answers; the store then sees the reverted job itself. The
// governor record the old version carries (allot.admitted-at, …) does not
// count again: its seal was made for the old version's submit time.
//
// A revert never pins: Nomad restores the old spec itself and the body
// carries none. An old version the governor had pinned carries that
// pin's constraint, which, its record stale, then reads as the user's
// own (not removed by the governor, nor unpinned when blocked).
func (p *Proxy) revert(w http.ResponseWriter, r *http.Request, id string) error {
	body, err := p.readBody(r)
	if err != nil {
		return err
	}
	var req revertRequest
	first, err := decodeFirst(body, &req)
	switch {
	case err != nil:
		return err
	case req.JobID == "":
		return badRequest("JobID must be specified")
	case req.JobID != id:
		return badRequest("Job ID does not match")
	}
	t, err := p.resolve(r, req.fields(), "", "")
	if err != nil {
		return err
	}
	if err := p.authorize(Revert, &t); err != nil {
		return err
	}
	if !p.governed(t.Namespace) {
		return p.passOn(w, r, body)
	}
	target, err := p.jobVersion(r, t.Namespace, id, req.JobVersion)
	if err == errNotFound {
		return p.passOn(w, r, body) // Nomad answers
	}
	if err != nil {
		return err
	}
	if (target.Stop != nil && *target.Stop) || target.IsPeriodic() || target.IsParameterized() {
		return p.passOn(w, r, body) // runs nothing itself
	}
	if _, _, err := p.classOf(t.Namespace, target.Meta); err != nil {
		return err
	}
	cand := cluster.ConvertJob(target)
	cand.ID, cand.State = id+"/revert-pending", engine.Queued
	return p.admitAndForward(w, r, admission{ns: t.Namespace, t: &t, what: fmt.Sprintf("reverting %s/%s to version %d", t.Namespace, id, req.JobVersion),
		cand: cand, body: unchanged(first)})
}

// jobVersion reads one version of job ns/id as Nomad stores it, with the
// caller's token.
func (p *Proxy) jobVersion(r *http.Request, ns, id string, version uint64) (*api.Job, error) {
	data, err := p.getOK(r, "/v1/job/"+id+"/versions", url.Values{"namespace": {ns}})
	if err != nil {
		return nil, err
	}
	var versions struct{ Versions []*api.Job }
	if err := json.Unmarshal(data, &versions); err != nil {
		return nil, fmt.Errorf("decoding versions of %s/%s from Nomad: %w", ns, id, err)
	}
	for _, j := range versions.Versions {
		if j != nil && j.Version != nil && *j.Version == version && str(j.ID) == id {
			if j.Namespace == nil {
				j.Namespace = &ns
			}
			return j, nil
		}
	}
	return nil, errNotFound
}
