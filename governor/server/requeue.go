package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/acl"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/reconcile"
)

// KindJobRequeue is the audit kind of a job requeued by a person (API,
// allotctl job requeue, the console).
const KindJobRequeue = "job-requeue"

// CauseManual is the decision cause of a requeue a person asked for.
const CauseManual = "manual"

// maxRequeueBody bounds the optional JSON body of a requeue.
const maxRequeueBody = 64 << 10

// Applier applies one engine decision through the governor's actuator
// (governor/actuate.Actuator.ApplyOne): the checkpoint-aware requeue the
// engine uses for preemption victims and the idle ladder for reclaims.
type Applier interface {
	ApplyOne(ctx context.Context, d engine.Decision) (bool, error)
}

// LeaderForwarder is the proxy's HA routing for the governor's own writes
// (governor/proxy.Proxy.ForwardToLeader): a standby forwards the request
// to the leader (or answers 503) and reports true; the leader and a
// single governor report false and handle it themselves.
type LeaderForwarder interface {
	ForwardToLeader(w http.ResponseWriter, r *http.Request) bool
}

// jobs routes /allot/v1/jobs/: POST .../requeue, else GET .../why.
func (s *Server) jobs(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/requeue") {
		s.requeue(w, r)
		return
	}
	s.authed(s.why)(w, r)
}

// requeue serves POST /allot/v1/jobs/<ns>/<id>/requeue: a running job is
// stopped the way a preemption victim is (a Requeue decision through the
// actuator: Nomad stops its allocations, the ckpt driver checkpoints each
// task before it exits) and held in the queue again, so it resumes from
// its checkpoint once the governor admits it again. The token must hold
// submit-job in the namespace (checked before anything about the job is
// looked up). Only the leader writes (HA): a standby forwards the request
// to the leader through the proxy, as admissions go (or answers 503 +
// Retry-After).
func (s *Server) requeue(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeErr(w, http.StatusMethodNotAllowed, "POST only")
		return
	}
	ns, id, ok := requeuePath(r.URL.Path)
	if !ok {
		writeErr(w, http.StatusNotFound, "use POST /allot/v1/jobs/<namespace>/<job id>/requeue")
		return
	}
	if f, ok := s.Proxy.(LeaderForwarder); ok && f.ForwardToLeader(w, r) {
		return // a standby: the leader answered with the caller's token, or 503
	}
	c, err := s.Auth.Authenticate(r)
	if err != nil {
		denyJSON(w, err)
		return
	}
	if !c.Allowed(ns, acl.NamespaceCapabilitySubmitJob) {
		writeErr(w, http.StatusForbidden, fmt.Sprintf("Permission denied: requeueing a job needs the submit-job capability in namespace %q", ns))
		return
	}
	in, err := readRequeue(r)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err.Error())
		return
	}
	d, status, msg := s.requeueDecision(ns, id, c, in.Reason)
	if status != http.StatusOK {
		writeErr(w, status, msg)
		return
	}
	if status, msg := s.leads(w); status != http.StatusOK {
		writeErr(w, status, msg)
		return
	}
	if status, msg := s.applyRequeue(r.Context(), w, d); status != http.StatusOK {
		writeErr(w, status, msg)
		return
	}
	allotapi.WriteJSON(w, http.StatusOK, s.recordRequeue(r.Context(), d, c, in.Reason))
}

// requeuePath splits /allot/v1/jobs/<ns>/<id>/requeue; the ID may hold
// any character.
func requeuePath(p string) (ns, id string, ok bool) {
	rest, ok := strings.CutSuffix(strings.TrimPrefix(p, "/allot/v1/jobs/"), "/requeue")
	ns, id, ok2 := strings.Cut(rest, "/")
	return ns, id, ok && ok2 && ns != "" && id != ""
}

// readRequeue reads the optional body: empty, or {"reason": "..."}.
func readRequeue(r *http.Request) (allotapi.RequeueRequest, error) {
	var in allotapi.RequeueRequest
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxRequeueBody+1))
	if err != nil {
		return in, fmt.Errorf("reading the request body: %w", err)
	}
	if len(raw) > maxRequeueBody {
		return in, fmt.Errorf("the request body is over %d bytes", maxRequeueBody)
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		return in, nil
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, fmt.Errorf("the body must be JSON like {\"reason\": \"...\"}: %v", err)
	}
	in.Reason, err = allotapi.RequeueReason(in.Reason)
	return in, err
}

// requeueDecision checks that ns/id is a running governed job the actuator
// can requeue and returns the decision, or the status and message of a
// refusal.
func (s *Server) requeueDecision(ns, id string, c *auth.Caller, reason string) (engine.Decision, int, string) {
	j, ok := s.Store.Job(ns, id)
	if !ok {
		return engine.Decision{}, http.StatusNotFound, fmt.Sprintf("job %q not found in namespace %q", id, ns)
	}
	p := s.Plans.Latest()
	if p == nil {
		return engine.Decision{}, http.StatusServiceUnavailable, errNoCycle
	}
	key := ns + "/" + id
	switch {
	case !governedIn(p, ns):
		return engine.Decision{}, http.StatusConflict, fmt.Sprintf("job %s is not governed: namespace %q carries no allot.* meta (or is outside governed_namespaces), so there is no queue to put it back in", key, ns)
	case j.State == engine.Queued:
		return engine.Decision{}, http.StatusConflict, fmt.Sprintf("job %s is not running: it is already queued", key)
	case !j.Running():
		return engine.Decision{}, http.StatusConflict, fmt.Sprintf("job %s is not running (%s): only a running job can be requeued", key, notRunning(j))
	case j.Dispatched:
		return engine.Decision{}, http.StatusConflict, fmt.Sprintf("job %s is a dispatched job, which Nomad cannot hold: stop it instead (nomad job stop)", key)
	case j.NeedsToken:
		return engine.Decision{}, http.StatusConflict, fmt.Sprintf("job %s needs its submitter's Vault/Consul token to be registered again, so the governor cannot requeue it", key)
	}
	actor, name := ledger.ActorOf(c)
	text := "requeued by " + actor
	if name != "" {
		text = "requeued by " + name + " (" + actor + ")"
	}
	if reason != "" {
		text += ": " + reason
	}
	return engine.Decision{Action: engine.Requeue, Namespace: ns, JobID: id, Version: j.Version, Class: j.Class,
		Priority: j.Priority, Cause: CauseManual, Reason: text}, http.StatusOK, ""
}

// notRunning says in words why a job the store knows is not running.
func notRunning(j *engine.Job) string {
	if j.State == engine.Stopped {
		return "stopped, periodic or parameterized"
	}
	return "finished"
}

// leads answers 200 when this governor may write: a single governor, or
// the HA leader. A standby whose proxy did not forward the request (or
// that lost the lead meanwhile) answers 503 with Retry-After and the
// leader's address, so a client retries there (or here after a failover).
func (s *Server) leads(w http.ResponseWriter) (int, string) {
	if s.Actuator == nil {
		return http.StatusServiceUnavailable, "this governor has no actuator: it cannot requeue jobs"
	}
	if s.HA == nil {
		return http.StatusOK, ""
	}
	st := s.HA.State()
	if st.Leading {
		return http.StatusOK, ""
	}
	w.Header().Set("Retry-After", "1")
	if st.Leader == nil {
		return http.StatusServiceUnavailable, "no governor leads now (an election is under way); nothing was changed, retry in a moment"
	}
	return http.StatusServiceUnavailable, fmt.Sprintf("this governor is a standby: only the leader %s (%s) requeues jobs; nothing was changed, send the request there",
		st.Leader.ID, st.Leader.URL)
}

// applyRequeue applies d, mapping the actuator's outcomes to answers.
func (s *Server) applyRequeue(ctx context.Context, w http.ResponseWriter, d engine.Decision) (int, string) {
	key := d.Namespace + "/" + d.JobID
	changed, err := s.Actuator.ApplyOne(ctx, d)
	switch {
	case errors.Is(err, actuate.ErrGone):
		return http.StatusNotFound, fmt.Sprintf("job %s no longer exists", key)
	case errors.Is(err, actuate.ErrConflict):
		return http.StatusConflict, fmt.Sprintf("job %s changed or stopped running meanwhile; nothing was changed (%v)", key, err)
	case errors.Is(err, actuate.ErrNotLeader):
		w.Header().Set("Retry-After", "1")
		return http.StatusServiceUnavailable, "this governor lost the lead before the write; nothing was changed, retry in a moment"
	case errors.Is(err, jobmeta.ErrSubmitterToken):
		return http.StatusConflict, fmt.Sprintf("Nomad needs the submitter's Vault/Consul token to register job %s again: %v", key, err)
	case err != nil:
		s.logger().Error("requeueing a job", "job", key, "error", err)
		return http.StatusBadGateway, fmt.Sprintf("requeueing job %s failed: %v", key, err)
	case !changed:
		return http.StatusConflict, fmt.Sprintf("job %s is not running: it is already queued", key)
	}
	return http.StatusOK, ""
}

// recordRequeue writes the applied requeue to the decisions journal and
// the ledger's audit chain, and returns the answer.
func (s *Server) recordRequeue(ctx context.Context, d engine.Decision, c *auth.Caller, reason string) allotapi.RequeueResult {
	actor, name := ledger.ActorOf(c)
	now := s.now()
	if s.Journal != nil {
		s.Journal.Add(reconcile.Record{Time: now, Kind: "requeue", Namespace: d.Namespace, JobID: d.JobID, Class: d.Class,
			Cause: CauseManual, Reason: d.Reason})
	}
	out := allotapi.RequeueResult{Namespace: d.Namespace, JobID: d.JobID, State: engine.Queued.String(), Actor: actor,
		ActorName: name, Reason: d.Reason, Audited: true}
	detail := "checkpoint-stopped and queued again through the governor"
	if reason != "" {
		detail += ": " + reason
	}
	e := ledger.Entry{Time: now, Kind: KindJobRequeue, Actor: actor, ActorName: name, Namespace: d.Namespace,
		Subject: d.JobID, Detail: detail}
	if err := s.appendAudit(ctx, e); err != nil {
		out.Audited, out.AuditError = false, err.Error()
		if !errors.Is(err, errNoAuditLog) {
			s.logger().Error("requeue not audited", "job", d.Namespace+"/"+d.JobID, "error", err)
		}
	}
	s.logger().Info("job requeued", "job", d.Namespace+"/"+d.JobID, "actor", actor, "actor_name", name, "reason", reason)
	return out
}

// logger is the server's logger (a null one when unset).
func (s *Server) logger() hclog.Logger {
	if s.Log == nil {
		return hclog.NewNullLogger()
	}
	return s.Log
}
