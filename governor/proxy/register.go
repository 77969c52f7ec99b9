package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/reconcile"
)

// submission is a register (or plan) request as Nomad will read it.
type submission struct {
	// first is the body's first JSON value, all Nomad reads of it; job is
	// its Job member.
	first []byte
	job   member
	// req is first decoded as Nomad decodes it (api.JobRegisterRequest);
	// req.Job becomes, once judged, the job as Nomad will store it.
	req api.JobRegisterRequest
	t   target
}

// parseSubmission decodes a register or plan request exactly as Nomad
// 1.6.1 does and resolves where it goes. pathID is the ID in the path
// ("" for /v1/jobs).
func (p *Proxy) parseSubmission(r *http.Request, body []byte, pathID string, plan bool) (*submission, error) {
	s := &submission{}
	var err error
	if plan {
		var pr api.JobPlanRequest
		s.first, err = decodeFirst(body, &pr)
		s.req.Job, s.req.WriteRequest = pr.Job, pr.WriteRequest
	} else {
		s.first, err = decodeFirst(body, &s.req)
	}
	switch {
	case err != nil:
		return nil, err
	case s.req.Job == nil:
		return nil, badRequest("Job must be specified")
	case s.req.Job.ID == nil:
		return nil, badRequest("Job ID hasn't been provided")
	case pathID != "" && *s.req.Job.ID != pathID:
		return nil, badRequest("Job ID does not match name")
	case s.req.Job.Multiregion != nil:
		return nil, badRequest("multiregion jobs are not governed: Nomad may write them to another region")
	}
	members, _ := objectMembers(s.first) // an object: it decoded into a struct with a Job
	found := 0
	for _, m := range members {
		// encoding/json matches keys without regard to case: "job" is the job too.
		if sameKey(m.key, "Job") {
			s.job, found = m, found+1
		}
	}
	switch {
	case found == 0:
		return nil, badRequest("the Job member of the request body cannot be located")
	case found > 1:
		// Nomad would merge the copies, which the governor cannot judge as one job.
		return nil, badRequest("the request body holds more than one Job member")
	}
	s.t, err = p.resolve(r, apiWrite(s.req.WriteRequest), str(s.req.Job.Namespace), str(s.req.Job.Region))
	return s, err
}

// register admits a job registration in a governed namespace: admitted
// jobs are registered admitted, the others held in the queue; both get
// Warnings. Jobs the governor does not admit themselves (periodic and
// parameterized parents, jobs registered stopped) are written with their
// class checked, their Priority set from it and no governor-owned meta.
func (p *Proxy) register(w http.ResponseWriter, r *http.Request, pathID string) error {
	body, err := p.readBody(r)
	if err != nil {
		return err
	}
	sub, err := p.parseSubmission(r, body, pathID, false)
	if err != nil {
		return err
	}
	if err := p.authorize(Register, &sub.t); err != nil {
		return err
	}
	if !p.governed(sub.t.Namespace) {
		return p.passOn(w, r, body)
	}
	j := sub.req.Job
	if err := canonical(j, sub.t.Namespace, sub.t.Region); err != nil {
		return err
	}
	_, prio, err := p.classOf(sub.t.Namespace, j.Meta)
	if err != nil {
		return err
	}
	j.Priority, j.Meta = &prio, jobmeta.StripOwned(j.Meta)
	switch {
	case isSystem(j) && p.system != SystemJobsGovern:
		return badRequest(fmt.Sprintf("%s jobs are not allowed in governed namespace %s (the governor's system_jobs = %q)", *j.Type, sub.t.Namespace, p.system))
	case j.IsPeriodic() || j.IsParameterized() || *j.Stop:
		// Admitted per child (or never run): written as sent, with no
		// governor state its children could inherit.
		return p.writeUngoverned(w, r, sub)
	}
	if sub.req.PreserveCounts {
		if err := p.preserveCounts(r, j); err != nil {
			return err
		}
	}
	return p.admitRegistration(w, r, sub)
}

func isSystem(j *api.Job) bool {
	return *j.Type == api.JobTypeSystem || *j.Type == api.JobTypeSysbatch
}

// admitRegistration reserves, marks (admitted or held, sealed) and
// writes the job.
func (p *Proxy) admitRegistration(w http.ResponseWriter, r *http.Request, sub *submission) error {
	j, ns := sub.req.Job, sub.t.Namespace
	prev := p.previous(ns, *j.ID)
	// `nomad job inspect` output sent back carries the governor's pin as
	// if it were the user's: drop exactly the pin the stored job's
	// verified record names (only that), before the job is judged.
	dropped := jobmeta.RemovePin(j, p.store.PinOf(prev))
	cand := cluster.ConvertJob(j)
	cand.Namespace = ns
	cand.NeedsToken = p.store.NeedsSubmitterToken(j)
	carry(cand, prev)
	st := jobmeta.Stamp{Now: time.Now(), SubmittedBy: sub.t.Accessor, Epoch: epochOf(r)}
	mark := func(hold bool) func(reconcile.Verdict) ([][]byte, error) {
		return func(v reconcile.Verdict) ([][]byte, error) {
			var err error
			if hold {
				err = p.sealer.Hold(j, cluster.RecordOf(prev), st)
			} else {
				err = p.sealer.AdmitPinned(j, cluster.RecordOf(prev), pinFor(v, prev), st)
			}
			if err != nil {
				return nil, fmt.Errorf("sealing the job: %w", err)
			}
			if dropped || jobmeta.Parse(j.Meta).Pinned() {
				if err := sub.setConstraints(j); err != nil {
					return nil, err
				}
			}
			return sub.rewrite(j)
		}
	}
	a := admission{ns: ns, t: &sub.t, what: fmt.Sprintf("registering %s/%s", ns, *j.ID), cand: cand, keep: true, body: mark(false),
		done: func(v reconcile.Verdict, data []byte) []byte { return p.remember(j, v, data) }}
	switch {
	case prev.Running():
		// Holding an update stops the version that runs: refuse it instead.
		a.why = " (the job runs now; an update that is not admitted is refused rather than held, which would stop it)"
	case cand.NeedsToken:
		a.why = " (the job needs its submitter's Vault or Consul token, which Nomad does not keep, so the governor cannot hold it)"
	default:
		a.hold = mark(true)
	}
	return p.admitAndForward(w, r, a)
}

// pinFor is the placement pin an admitting write carries: the verdict's
// (the engine packed the job onto those nodes), except for an update of a
// running job, which is never pinned: a pin could move its running
// allocations. (Scale, dispatch, revert and periodic force never pin:
// see their comments.)
func pinFor(v reconcile.Verdict, prev *engine.Job) map[string][]string {
	if prev.Running() {
		return nil
	}
	return v.Nodes
}

// writeUngoverned writes a job the governor does not admit itself, with
// its Priority and meta as judged.
func (p *Proxy) writeUngoverned(w http.ResponseWriter, r *http.Request, sub *submission) error {
	pieces, err := sub.rewrite(sub.req.Job)
	if err != nil {
		return err
	}
	resp, data, err := p.forward(r, pieces...)
	if err != nil {
		return err
	}
	reply(w, resp, data)
	return nil
}

// previous is the stored job's engine view (nil for a new job): the
// governor's record carries over from it, never from the body.
func (p *Proxy) previous(ns, id string) *engine.Job {
	j, ok := p.store.Job(ns, id)
	if !ok {
		return nil
	}
	return j
}

// carry copies the stored job's queue record into the candidate: a held
// job keeps its place, and requeues, requeued-at and preempted-by survive
// a re-submission (the engine applies the back-off to them).
func carry(cand *engine.Job, prev *engine.Job) {
	if prev == nil {
		return
	}
	if prev.State == engine.Queued {
		cand.QueuedAt = prev.QueuedAt
	}
	cand.Requeues, cand.RequeuedAt, cand.PreemptedBy = prev.Requeues, prev.RequeuedAt, prev.PreemptedBy
}

// preserveCounts applies PreserveCounts as Nomad's Job.Register does:
// every group the stored job has keeps the stored count. A new job keeps
// its counts.
func (p *Proxy) preserveCounts(r *http.Request, j *api.Job) error {
	stored, err := p.current(r, *j.Namespace, *j.ID)
	if err == errNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	counts := map[string]int{}
	for _, g := range stored.Groups {
		counts[g.Name] = g.Count
	}
	for _, tg := range j.TaskGroups {
		if c, ok := counts[*tg.Name]; ok {
			tg.Count = &c
		}
	}
	return bounds(j)
}

// current is the engine view (a copy) of job ns/id as Nomad stores it
// now: the store's, which Nomad's event stream keeps and which needs no
// capability beyond the route's own (a dispatch-only token cannot read
// jobs), else the job read from Nomad with the caller's token. Periodic
// and parameterized parents, like stopped jobs, are engine.Stopped.
func (p *Proxy) current(r *http.Request, ns, id string) (*engine.Job, error) {
	if j, ok := p.store.Job(ns, id); ok {
		cp := *j
		cp.Groups = append([]engine.Group(nil), j.Groups...)
		return &cp, nil
	}
	aj, err := p.storedJob(r, ns, id)
	if err != nil {
		return nil, err
	}
	return cluster.ConvertStored(aj, p.sealer), nil
}

// storedJob reads job ns/id as Nomad stores it, with the caller's token.
func (p *Proxy) storedJob(r *http.Request, ns, id string) (*api.Job, error) {
	data, err := p.getOK(r, "/v1/job/"+id, url.Values{"namespace": {ns}})
	if err != nil {
		return nil, err
	}
	var j api.Job
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("decoding job %s/%s from Nomad: %w", ns, id, err)
	}
	if j.Namespace == nil {
		j.Namespace = &ns
	}
	return &j, nil
}

// remember tells the store about the job just written, before its event,
// and adds the governor's warning to Nomad's answer.
func (p *Proxy) remember(j *api.Job, v reconcile.Verdict, data []byte) []byte {
	var rr api.JobRegisterResponse
	if err := json.Unmarshal(data, &rr); err != nil {
		return data
	}
	stored := *j
	stored.JobModifyIndex = &rr.JobModifyIndex
	now := time.Now().UnixNano()
	stored.SubmitTime = &now
	p.store.UpsertJob(&stored)
	return withWarning(data, warning(*j.Namespace, *j.ID, v))
}

// warning is the text the nomad CLI prints under "Job Warnings".
func warning(ns, id string, v reconcile.Verdict) string {
	if v.Admitted {
		return fmt.Sprintf("allot: job %s/%s admitted (class %s, priority %d)", ns, id, v.Class, v.Priority)
	}
	return fmt.Sprintf("allot: job %s/%s is QUEUED (held, not running): position %d of %d in the queue, %d in tenant %s.\n  reason: %s\n  details: GET /allot/v1/jobs/%s/%s/why on the governor",
		ns, id, v.Position, v.Total, v.TenantPosition, ns, v.Reason, ns, id)
}

// withWarning appends text to the Warnings field of a JSON response.
func withWarning(data []byte, text string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return data
	}
	var prev string
	_ = json.Unmarshal(m["Warnings"], &prev)
	if prev != "" {
		text = prev + "\n" + text
	}
	raw, _ := json.Marshal(text)
	m["Warnings"] = raw
	out, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return out
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func pointer[T any](v T) *T { return &v }
