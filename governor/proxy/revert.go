package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
)

// revert admits the version a revert would restore. Nomad re-registers
// that version's spec (its Stop flag and allot.* meta included) as a new
// version, so a revert could otherwise start a held job or grow an
// admitted one past its tenant's limit. A revert to a held version holds
// nothing and passes; one that would not be admitted now is refused with
// 409 and the reason, and Nomad never sees it.
//
// The target version is weighed on top of what the job runs now: the
// worst moment of a destructive update, when Nomad places the new
// allocations before the old ones are gone. The reservation is released
// once Nomad answers; the store then sees the reverted job itself.
func (p *Proxy) revert(w http.ResponseWriter, r *http.Request, id string) error {
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = api.DefaultNamespace
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var req api.JobRevertRequest
	if !p.governed(ns) || json.Unmarshal(body, &req) != nil {
		// Ungoverned, or malformed: Nomad decides and explains.
		p.rp.ServeHTTP(w, r)
		return nil
	}
	target, ok := p.readJobVersion(r, ns, id, req.JobVersion)
	if !ok || target.State == engine.Queued {
		p.rp.ServeHTTP(w, r)
		return nil
	}
	cand := *target
	cand.ID, cand.State = id+"/revert-pending", engine.Queued
	v, undo := p.rec.Reserve(&cand)
	defer undo()
	if !v.Admitted {
		p.countSubmission(ns, v)
		msg := fmt.Sprintf("allot-governor: reverting %s/%s to version %d is not admitted now (nothing was changed): %s\n", ns, id, req.JobVersion, v.Reason)
		http.Error(w, msg, http.StatusConflict)
		return nil
	}
	resp, data, err := p.forward(r, body)
	if err != nil {
		return err
	}
	p.countSubmission(ns, v)
	reply(w, resp, data)
	return nil
}

// readJobVersion reads one version of job ns/id from Nomad with the
// caller's headers.
func (p *Proxy) readJobVersion(r *http.Request, ns, id string, version uint64) (*engine.Job, bool) {
	get := r.Clone(r.Context())
	get.Method = http.MethodGet
	get.URL.Path = "/v1/job/" + id + "/versions"
	get.URL.RawPath = ""
	get.URL.RawQuery = url.Values{"namespace": {ns}}.Encode()
	resp, data, err := p.forward(get, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, false
	}
	var versions struct{ Versions []json.RawMessage }
	if json.Unmarshal(data, &versions) != nil {
		return nil, false
	}
	for _, raw := range versions.Versions {
		j, err := cluster.DecodeJob(raw)
		if err == nil && j.Version != nil && *j.Version == version && strings.EqualFold(str(j.ID), id) {
			return cluster.ConvertJob(j), true
		}
	}
	return nil, false
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
