package proxy

import (
	"net/http"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// plan forwards a job plan and adds to its Warnings what the governor
// would do with the job if it were submitted now. A plan writes nothing,
// so it needs no admission, but it is read as Nomad reads it: a body or a
// namespace the governor cannot judge is refused like a register, and the
// preview (which names the tenant's usage) is shown only after Nomad
// accepted the caller's token for that namespace. A plan never pins:
// it writes nothing (the verdict's Nodes are not used), and its preview
// judges the job without the pin the stored record names, as a register
// would.
func (p *Proxy) plan(w http.ResponseWriter, r *http.Request, pathID string) error {
	body, err := p.readBody(r)
	if err != nil {
		return err
	}
	sub, err := p.parseSubmission(r, body, pathID, true)
	if err != nil {
		return err
	}
	if err := p.authorize(Plan, &sub.t); err != nil {
		return err
	}
	resp, data, err := p.forward(r, sub.first)
	if err != nil {
		return err
	}
	j := sub.req.Job
	if resp.StatusCode != http.StatusOK || !p.governed(sub.t.Namespace) || canonical(j, sub.t.Namespace, sub.t.Region) != nil ||
		j.IsPeriodic() || j.IsParameterized() || *j.Stop {
		reply(w, resp, data)
		return nil
	}
	j.Meta = jobmeta.StripOwned(j.Meta)
	prev := p.previous(sub.t.Namespace, *j.ID)
	jobmeta.RemovePin(j, p.store.PinOf(prev))
	cand := cluster.ConvertJob(j)
	cand.Namespace = sub.t.Namespace
	carry(cand, prev)
	v := p.rec.Evaluate(cand)
	v.Reason = sub.t.Redact(v.Reason)
	reply(w, resp, withWarning(data, "(plan preview) "+warning(sub.t.Namespace, cand.ID, v)))
	return nil
}
