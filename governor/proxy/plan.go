package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
)

// plan forwards a job plan unchanged and adds to its Warnings what the
// governor would do with the job if it were submitted now.
func (p *Proxy) plan(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	resp, data, err := p.forward(r, body)
	if err != nil {
		return err
	}
	sub, ok, _ := parseSubmission(r, body) // Nomad judges a body it cannot take
	if resp.StatusCode == http.StatusOK && ok && p.governed(sub.ns) && admissible(sub.parsed) {
		cand := cluster.ConvertJob(sub.parsed)
		cand.Namespace = sub.ns
		v := p.rec.Evaluate(cand)
		data = withWarning(data, "(plan preview) "+warning(sub.ns, cand.ID, v))
	}
	reply(w, resp, data)
	return nil
}

// scale admits a scale-up of a governed job: when the extra allocations
// would not be admitted now, the request is refused with the reason and
// the job is left as it was. Scale-downs and ungoverned jobs pass.
func (p *Proxy) scale(w http.ResponseWriter, r *http.Request, id string) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var req api.ScalingRequest
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = api.DefaultNamespace
	}
	cur, ok := p.store.Job(ns, id)
	if json.Unmarshal(body, &req) != nil || req.Count == nil || !ok || !p.governed(ns) || cur.State != engine.Admitted {
		p.rp.ServeHTTP(w, r)
		return nil
	}
	cand, grown := scaled(cur, req.Target["Group"], int(*req.Count))
	if !grown {
		p.rp.ServeHTTP(w, r)
		return nil
	}
	verdict, undo := p.rec.Reserve(cand)
	if !verdict.Admitted {
		msg := fmt.Sprintf("allot-governor: scaling %s/%s group %q to %d is not admitted now: %s\n", ns, id, req.Target["Group"], *req.Count, verdict.Reason)
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
	reply(w, resp, data)
	return nil
}

// scaled returns a copy of job j with group g at count n, and whether
// that grows the group.
func scaled(j *engine.Job, g string, n int) (*engine.Job, bool) {
	cp := *j
	cp.Groups = append([]engine.Group(nil), j.Groups...)
	for i := range cp.Groups {
		if cp.Groups[i].Name == g && n > cp.Groups[i].Count {
			cp.Groups[i].Count = n
			return &cp, true
		}
	}
	return &cp, false
}
