package jobmeta

import (
	"strconv"
	"strings"
	"time"
)

// Record is the governor's record of a job: the values of the
// governor-owned keys. Read it from a stored job with Sealer.Verify (which
// returns the zero Record unless the seal holds); Parse reads it without
// verification, for display and tests only.
type Record struct {
	// State is StateQueued, StateAdmitted or "" (no record).
	State      string
	QueuedAt   time.Time
	AdmittedAt time.Time
	RequeuedAt time.Time
	Requeues   int
	// PreemptedBy lists the preemptors, most recent last: opaque
	// references (Sealer.Ref) as stored; a writer also accepts "ns/id".
	PreemptedBy []string
	Epoch       uint64
	SubmittedBy string
	// Pin is the placement pin the governor wrote into the job's groups
	// (allot.pin), nil when none: exactly the constraints the writers
	// remove again.
	Pin Pin
}

// Admitted reports whether the record says the governor admitted the job.
func (r Record) Admitted() bool { return r.State == StateAdmitted }

// Queued reports whether the record says the governor holds the job.
func (r Record) Queued() bool { return r.State == StateQueued }

// Pinned reports whether the record says the governor pinned the job's
// placement.
func (r Record) Pinned() bool { return len(r.Pin) > 0 }

// Parse reads the record from meta without verifying it: malformed values
// count as absent. Never trust its result for admission; use
// Sealer.Verify.
func Parse(meta map[string]string) Record {
	r := Record{State: meta[State], PreemptedBy: strings.Fields(meta[PreemptedBy]), SubmittedBy: meta[SubmittedBy],
		Pin: parsePin(meta[PinKey])}
	if r.State != StateQueued && r.State != StateAdmitted {
		r.State = ""
	}
	r.QueuedAt = parseTime(meta[QueuedAt])
	r.AdmittedAt = parseTime(meta[AdmittedAt])
	r.RequeuedAt = parseTime(meta[RequeuedAt])
	if n, err := strconv.Atoi(meta[Requeues]); err == nil && n > 0 {
		r.Requeues = n
	}
	if n, err := strconv.ParseUint(meta[Epoch], 10, 64); err == nil {
		r.Epoch = n
	}
	if len(r.PreemptedBy) == 0 {
		r.PreemptedBy = nil
	}
	return r
}

// LastPreemptor is the most recent preemptor, or "".
func (r Record) LastPreemptor() string {
	if len(r.PreemptedBy) == 0 {
		return ""
	}
	return r.PreemptedBy[len(r.PreemptedBy)-1]
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// meta renders the record as the governor-owned keys it writes. Requeues
// is always written (0 included), so every writer produces the same keys.
func (r Record) meta() map[string]string {
	m := map[string]string{State: r.State, Requeues: strconv.Itoa(r.Requeues)}
	putTime(m, QueuedAt, r.QueuedAt)
	putTime(m, AdmittedAt, r.AdmittedAt)
	putTime(m, RequeuedAt, r.RequeuedAt)
	if len(r.PreemptedBy) > 0 {
		m[PreemptedBy] = strings.Join(r.PreemptedBy, " ")
	}
	if r.Epoch > 0 {
		m[Epoch] = strconv.FormatUint(r.Epoch, 10)
	}
	if r.SubmittedBy != "" {
		m[SubmittedBy] = r.SubmittedBy
	}
	if v := r.Pin.encode(); v != "" {
		m[PinKey] = v
	}
	return m
}

func putTime(m map[string]string, key string, t time.Time) {
	if !t.IsZero() {
		m[key] = t.UTC().Format(time.RFC3339Nano)
	}
}

// preemptorsKept bounds how many preemptors PreemptedBy remembers.
const preemptorsKept = 8

// WithPreemptor appends key to list once, most recent last, keeping the
// newest preemptorsKept entries: allot.preempted-by's rule, which the
// simulator (governor/sim, notePreemptor) follows for its jobs too.
func WithPreemptor(list []string, key string) []string {
	keep := make([]string, 0, len(list)+1)
	for _, k := range list {
		if k != key {
			keep = append(keep, k)
		}
	}
	keep = append(keep, key)
	if len(keep) > preemptorsKept {
		keep = keep[len(keep)-preemptorsKept:]
	}
	return keep
}
