package cluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// ConvertStored converts a job as Nomad stores it: its governor record
// (allot.state, queue times, requeues) counts only when s verifies the
// job's admission seal. An unsealed job, forged, copied, reverted, scaled
// or edited straight in Nomad, is Direct (or Stopped): governed like any
// job registered without the governor. A nil s verifies nothing.
func ConvertStored(j *api.Job, s *jobmeta.Sealer) *engine.Job {
	rec, _ := s.Verify(j)
	return convertJob(j, rec, jobmeta.Tokens{})
}

// JobState derives the governor's view of stored job j (see
// ConvertStored): held = Stop and a sealed queued record; stopped without
// one = a user's stop; periodic and parameterized parents, which never run
// allocations themselves, are Stopped; admitted = a sealed admitted
// record; anything else running is Direct.
func JobState(j *api.Job, s *jobmeta.Sealer) engine.State {
	rec, _ := s.Verify(j)
	return jobState(j, rec)
}

func jobState(j *api.Job, rec jobmeta.Record) engine.State {
	stop := j.Stop != nil && *j.Stop
	switch {
	case stop && rec.Queued():
		return engine.Queued
	case stop:
		return engine.Stopped
	case j.IsPeriodic() || j.IsParameterized():
		return engine.Stopped
	case rec.Admitted():
		return engine.Admitted
	}
	return engine.Direct
}

// applyRecord copies the verified record rec and the user-set keys the
// engine reads onto out.
func applyRecord(out *engine.Job, j *api.Job, rec jobmeta.Record) {
	out.QueuedAt, out.AdmittedAt, out.RequeuedAt = rec.QueuedAt, rec.AdmittedAt, rec.RequeuedAt
	out.Requeues = rec.Requeues
	// Only an admitted record's pin counts (the writers record one only
	// with an admission).
	out.Pinned = rec.Pinned() && out.State == engine.Admitted
	out.PreemptedBy = strings.Join(rec.PreemptedBy, " ")
	out.NoGang = strings.EqualFold(strings.TrimSpace(j.Meta[jobmeta.Gang]), "false")
	out.MaxRuntime, out.MaxRuntimeErr = maxRuntime(j.Meta[jobmeta.MaxRuntime])
}

// MaxRuntimeLimit is the longest allot.max-runtime the governor accepts
// (365 days). A longer value is reported like a malformed one: the
// engine's reservations count on the limit, and a limit of centuries
// promises nothing.
const MaxRuntimeLimit = 365 * 24 * time.Hour

// maxRuntime reads allot.max-runtime ("4h", "90m"): zero when unset; a
// value that is not a positive duration of at most MaxRuntimeLimit is
// reported, never guessed. The report quotes the value bounded
// (jobmeta.Quote): it reaches verdicts, decisions, the log and the
// console.
func maxRuntime(v string) (time.Duration, string) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, ""
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > MaxRuntimeLimit {
		return 0, fmt.Sprintf("%s is not a positive duration of at most %s (e.g. \"4h\", \"90m\")",
			jobmeta.Quote(v), maxRuntimeLimitText)
	}
	return d, ""
}

// maxRuntimeLimitText is MaxRuntimeLimit as the report spells it.
const maxRuntimeLimitText = "8760h"

// RecordOf is the verified governor record the store's job j was
// converted from: the "previous record" a writer carries over (the proxy
// reads it from the store, never from a caller's body).
func RecordOf(j *engine.Job) jobmeta.Record {
	if j == nil {
		return jobmeta.Record{}
	}
	r := jobmeta.Record{QueuedAt: j.QueuedAt, AdmittedAt: j.AdmittedAt, RequeuedAt: j.RequeuedAt,
		Requeues: j.Requeues, PreemptedBy: strings.Fields(j.PreemptedBy)}
	switch j.State {
	case engine.Queued:
		r.State = jobmeta.StateQueued
	case engine.Admitted:
		r.State = jobmeta.StateAdmitted
	}
	if len(r.PreemptedBy) == 0 {
		r.PreemptedBy = nil
	}
	return r
}
