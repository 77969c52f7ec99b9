package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/reconcile"
)

// submission is a job register request. The body is kept as received:
// only the job's Meta, Stop and Priority are rewritten, so fields this
// proxy does not know reach Nomad byte for byte.
type submission struct {
	body []byte
	// job is the Job member of body.
	job member
	// parsed is the job decoded for admission (what the governor reads of
	// it: cluster.DecodeJob).
	parsed *api.Job
	ns     string
}

// errJobTwice refuses a body that names its job more than once: Nomad
// would merge the copies, which the governor cannot judge as one job.
var errJobTwice = errors.New("the request body holds more than one Job member")

// parseSubmission decodes a register request. ok is false when the body
// is not a register request the proxy understands; Nomad then judges it.
func parseSubmission(r *http.Request, body []byte) (sub *submission, ok bool, err error) {
	if !json.Valid(body) {
		return nil, false, nil
	}
	members, isObject := objectMembers(body)
	if !isObject {
		return nil, false, nil
	}
	s := &submission{body: body}
	found := 0
	for _, m := range members {
		// Nomad decodes with encoding/json, which matches keys without
		// regard to case: "job" is the job too.
		if strings.EqualFold(m.key, "Job") {
			s.job, found = m, found+1
		}
	}
	switch found {
	case 0:
		return nil, false, nil
	case 1:
	default:
		return nil, false, errJobTwice
	}
	parsed, err := cluster.DecodeJob(body[s.job.value:s.job.end])
	if err != nil || parsed.ID == nil {
		return nil, false, nil
	}
	s.parsed = parsed
	s.ns = namespaceOf(r, s.parsed)
	return s, true, nil
}

// namespaceOf is the namespace a job is written to: the job's own, else
// the request's, else default.
func namespaceOf(r *http.Request, j *api.Job) string {
	if j.Namespace != nil && *j.Namespace != "" {
		return *j.Namespace
	}
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return api.DefaultNamespace
}

// admissible tells whether the governor admits this job at all: periodic
// and parameterized parents, system jobs and jobs registered stopped pass.
func admissible(j *api.Job) bool {
	state := cluster.JobState(j)
	return state == engine.Direct || state == engine.Admitted
}

// register admits a job registration: admitted jobs are registered with
// allot.state=admitted, the others held in the queue; both get Warnings.
func (p *Proxy) register(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	sub, ok, err := parseSubmission(r, body)
	if err != nil {
		http.Error(w, "allot-governor: "+err.Error(), http.StatusBadRequest)
		return nil
	}
	if !ok || !p.governed(sub.ns) || !admissible(sub.parsed) {
		p.rp.ServeHTTP(w, r)
		return nil
	}
	cand := cluster.ConvertJob(sub.parsed)
	cand.Namespace = sub.ns
	if old, ok := p.store.Job(sub.ns, cand.ID); ok && old.State == engine.Queued {
		cand.QueuedAt = old.QueuedAt // an edit of a held job keeps its place
	}
	v, undo := p.rec.Reserve(cand)
	written, err := p.writeAdmitted(w, r, sub, cand, v)
	if !written {
		undo()
	}
	return err
}

// writeAdmitted rewrites the job for verdict v, registers it with the
// caller's token and replies with the governor's warning added. It
// reports whether Nomad accepted the job.
func (p *Proxy) writeAdmitted(w http.ResponseWriter, r *http.Request, sub *submission, cand *engine.Job, v reconcile.Verdict) (bool, error) {
	queuedAt := cand.QueuedAt
	if err := sub.mark(v, queuedAt, time.Now()); err != nil {
		return false, err
	}
	resp, data, err := p.forward(r, sub.body)
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK {
		reply(w, resp, data)
		return false, nil
	}
	var rr api.JobRegisterResponse
	if err := json.Unmarshal(data, &rr); err == nil {
		p.remember(sub, rr.JobModifyIndex)
		data = withWarning(data, warning(sub.ns, cand.ID, v))
	}
	p.countSubmission(sub.ns, v)
	reply(w, resp, data)
	return true, nil
}

// mark sets Stop, Priority and the allot.* meta for the verdict and
// rewrites the body: every member of the job keeps its bytes except
// those, which are replaced (a key Nomad would read as one of them, in
// any case, is dropped).
func (s *submission) mark(v reconcile.Verdict, queuedAt, now time.Time) error {
	meta := map[string]string{}
	for k, val := range s.parsed.Meta {
		meta[k] = val
	}
	if v.Admitted {
		meta[cluster.MetaState] = cluster.StateAdmitted
		meta[cluster.MetaAdmittedAt] = now.UTC().Format(time.RFC3339Nano)
	} else {
		meta[cluster.MetaState] = cluster.StateQueued
		meta[cluster.MetaQueuedAt] = queuedAt.UTC().Format(time.RFC3339Nano)
	}
	set := []field{{"Meta", meta}, {"Stop", !v.Admitted}}
	if v.Priority > 0 {
		set = append(set, field{"Priority", v.Priority})
	}
	job := s.body[s.job.value:s.job.end]
	members, _ := objectMembers(job) // an object: DecodeJob accepted it
	out := make([]byte, 0, len(s.body)+256)
	out = append(append(out, s.body[:s.job.value]...), '{')
	n := 0
	for _, m := range members {
		if replaced(m.key, set) {
			continue
		}
		if n++; n > 1 {
			out = append(out, ',')
		}
		out = append(out, job[m.start:m.end]...)
	}
	for _, f := range set {
		raw, err := json.Marshal(f.val)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", f.key, err)
		}
		if n++; n > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, '"'), f.key...), `":`...)
		out = append(out, raw...)
	}
	out = append(append(out, '}'), s.body[s.job.end:]...)
	s.parsed.Meta, s.parsed.Stop = meta, pointer(!v.Admitted)
	s.body = out
	return nil
}

// field is a member of the job the proxy sets.
type field struct {
	key string
	val any
}

// replaced tells whether Nomad would read key as one of the fields set.
func replaced(key string, set []field) bool {
	for _, f := range set {
		if strings.EqualFold(key, f.key) {
			return true
		}
	}
	return false
}

// remember tells the store about the job just written, before its event.
func (p *Proxy) remember(sub *submission, index uint64) {
	j := *sub.parsed
	j.Namespace = &sub.ns
	j.JobModifyIndex = &index
	now := time.Now().UnixNano()
	j.SubmitTime = &now
	p.store.UpsertJob(&j)
}

func (p *Proxy) countSubmission(ns string, v reconcile.Verdict) {
	if p.metrics == nil {
		return
	}
	if v.Admitted {
		p.metrics.Submissions.WithLabelValues(ns, "admitted").Inc()
		p.metrics.AdmittedTotal.WithLabelValues(ns, "proxy").Inc()
		return
	}
	p.metrics.Submissions.WithLabelValues(ns, "queued").Inc()
	p.metrics.HeldTotal.WithLabelValues(ns, "proxy").Inc()
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

func pointer[T any](v T) *T { return &v }
