package reconcile

import (
	"sync"
	"time"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/engine"
)

// journalSize is how many recent decisions the journal keeps.
const journalSize = 500

// CauseSubmitterToken is the cause of a "blocked" record: Nomad refused
// the governor's write for want of the submitter's Vault/Consul token
// (audit #19).
const CauseSubmitterToken = "submitter-token"

// Record is one applied decision worth explaining later: a preemption
// (preemptor and victims), a hold, stop or requeue of a single job, or a
// decision Nomad refused for good ("blocked").
type Record struct {
	Time time.Time
	// Kind is preemption, requeue (gang timeout), hold (direct job over
	// its limit, or breaking its class rules), stop (a dispatched job that
	// cannot be held) or blocked (see CauseSubmitterToken).
	Kind      string
	Namespace string
	JobID     string
	Class     string
	// Cause is reclaim, priority or gang-timeout for requeues; over-limit,
	// class or priority for holds and stops; submitter-token for blocked.
	Cause   string
	Reason  string
	Victims []engine.Victim
	// SubmittedBy is the accessor ID of the token that submitted the job
	// through the governor (its sealed record), when known: the governor's
	// own writes carry the governor's token in Nomad (audit #30).
	SubmittedBy string `json:",omitempty"`
}

// Journal keeps the most recent records. Safe for concurrent use.
type Journal struct {
	mu   sync.Mutex
	recs []Record
}

// Add appends records, dropping the oldest beyond journalSize.
func (j *Journal) Add(recs ...Record) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recs = append(j.recs, recs...)
	if over := len(j.recs) - journalSize; over > 0 {
		j.recs = append([]Record(nil), j.recs[over:]...)
	}
}

// Recent returns the records, newest first.
func (j *Journal) Recent() []Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Record, len(j.recs))
	for i, r := range j.recs {
		out[len(out)-1-i] = r
	}
	return out
}

// records turns what the actuator applied into journal records: one per
// preemption with at least one victim requeued (listing those victims),
// one per gang-timeout requeue, per hold of a direct job and per unpin
// (a pinned job Nomad could not place: the governor rewrote it without
// its placement pin).
func records(plan *engine.Plan, res actuate.Result) []Record {
	applied := map[string]engine.Decision{}
	var out []Record
	for _, d := range res.Applied {
		key := d.Namespace + "/" + d.JobID
		applied[key] = d
		switch {
		case d.Action == engine.Hold || d.Action == engine.Stop:
			cause := d.Cause
			if cause == "" {
				cause = "over-limit"
			}
			out = append(out, Record{Time: plan.Now, Kind: d.Action.String(), Namespace: d.Namespace, JobID: d.JobID, Class: d.Class, Cause: cause, Reason: d.Reason,
				SubmittedBy: res.SubmittedBy[key]})
		case d.Action == engine.Unpin:
			out = append(out, Record{Time: plan.Now, Kind: "unpin", Namespace: d.Namespace, JobID: d.JobID, Class: d.Class, Cause: "blocked", Reason: d.Reason,
				SubmittedBy: res.SubmittedBy[key]})
		case d.Action == engine.Requeue && d.Cause == engine.CauseGangTimeout:
			out = append(out, Record{Time: plan.Now, Kind: "requeue", Namespace: d.Namespace, JobID: d.JobID, Class: d.Class, Cause: d.Cause, Reason: d.Reason,
				SubmittedBy: res.SubmittedBy[key]})
		}
	}
	for _, b := range res.Blocked {
		d := b.Decision
		out = append(out, Record{Time: plan.Now, Kind: "blocked", Namespace: d.Namespace, JobID: d.JobID, Class: d.Class, Cause: CauseSubmitterToken,
			SubmittedBy: res.SubmittedBy[d.Namespace+"/"+d.JobID],
			Reason:      d.Action.String() + " not applied, and not retried until the job changes: Nomad needs the submitter's Vault/Consul token to register it (" + d.Reason + ")"})
	}
	for _, p := range plan.Preemptions {
		rec := Record{Time: plan.Now, Kind: "preemption", Namespace: p.Namespace, JobID: p.JobID, Class: p.Class, Cause: p.Cause, Reason: p.Reason}
		for _, v := range p.Victims {
			// A dispatched victim is stopped rather than requeued.
			if d, ok := applied[v.Namespace+"/"+v.JobID]; ok && (d.Action == engine.Requeue || d.Action == engine.Stop) {
				rec.Victims = append(rec.Victims, v)
			}
		}
		if len(rec.Victims) > 0 {
			out = append(out, rec)
		}
	}
	return out
}
