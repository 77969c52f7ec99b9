package jobmeta

import (
	"errors"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Stamp is what every governor write records besides the verdict.
type Stamp struct {
	// Now is the time of the write (the governor's clock).
	Now time.Time
	// Epoch is the writer's leader term (0: none, not written).
	Epoch uint64
	// SubmittedBy is the accessor ID of the caller whose submission this
	// write carries; empty keeps the previous record's.
	SubmittedBy string
}

// The writers below set job's Stop and Meta for one governor decision and
// seal the result. job is the job exactly as it will be written: call them
// last, after the namespace, priority and every other field are final.
// Its user meta is kept, every governor-owned key in it is replaced (so a
// caller's forged values never survive), and prev, the previous governor
// record, must come from the STORED job through Sealer.Verify (zero for a
// new or unsealed job), never from a caller's body.

// Admit marks job admitted: Stop=false, allot.state=admitted,
// allot.admitted-at=now; queued-at, requeues, requeued-at and
// preempted-by carry over from prev (back-off and loop protection survive
// a re-admission). The pin prev records is removed from job; it writes no
// new one (AdmitPinned does).
func (s *Sealer) Admit(job *api.Job, prev Record, st Stamp) error {
	return s.AdmitPinned(job, prev, nil, st)
}

// AdmitPinned is Admit that also pins the job's placement: the pin prev
// records is removed from job first; then nodes (engine.Decision.Nodes,
// nil for none) pins each group it names: the constraint
// ${node.unique.id} set_contains_any <ids> is appended to the group and
// recorded in allot.pin.
func (s *Sealer) AdmitPinned(job *api.Job, prev Record, nodes map[string][]string, st Stamp) error {
	RemovePin(job, prev.Pin)
	r := carried(prev, st)
	r.State, r.AdmittedAt = StateAdmitted, st.Now
	if pin := NewPin(nodes); pin != nil {
		if s == nil || len(s.key) == 0 {
			return ErrNoKey // nothing added that no record would name
		}
		r.Pin = addPin(job, pin)
	}
	return s.write(job, r, false, st.Now)
}

// Unpin removes the pin prev records from job and keeps it admitted with
// its admitted-at (the gang timeout keeps counting from the admission):
// Nomad places what it could not place on the pinned nodes anywhere it
// fits. prev must be an admitted record (ErrNotAdmitted otherwise).
func (s *Sealer) Unpin(job *api.Job, prev Record, st Stamp) error {
	if !prev.Admitted() {
		return ErrNotAdmitted
	}
	RemovePin(job, prev.Pin)
	r := carried(prev, st)
	r.State, r.AdmittedAt = StateAdmitted, prev.AdmittedAt
	return s.write(job, r, false, st.Now)
}

// ErrNotAdmitted refuses to unpin a job the governor's record does not
// say it admitted.
var ErrNotAdmitted = errors.New("the governor's record does not say the job is admitted")

// Hold marks job held: Stop=true, allot.state=queued. A job prev already
// holds keeps its queued-at (an edit keeps its place); otherwise it is
// queued now. Requeue history carries over; the pin prev records is
// removed.
func (s *Sealer) Hold(job *api.Job, prev Record, st Stamp) error {
	RemovePin(job, prev.Pin)
	r := carried(prev, st)
	r.State = StateQueued
	if !prev.Queued() || r.QueuedAt.IsZero() {
		r.QueuedAt = st.Now
	}
	return s.write(job, r, true, st.Now)
}

// Requeue stops a running job and queues it again: it keeps its original
// queued-at (now when it has none), allot.requeues grows by one,
// allot.requeued-at is now and preemptor ("ns/id", when not empty) is
// appended to allot.preempted-by as its opaque reference (Ref; at most 8
// kept). The pin prev records is removed.
func (s *Sealer) Requeue(job *api.Job, prev Record, preemptor string, st Stamp) error {
	RemovePin(job, prev.Pin)
	r := carried(prev, st)
	r.State = StateQueued
	if r.QueuedAt.IsZero() {
		r.QueuedAt = st.Now
	}
	r.Requeues++
	r.RequeuedAt = st.Now
	if ref := s.Ref(preemptor); preemptor != "" && ref != "" {
		r.PreemptedBy = WithPreemptor(r.PreemptedBy, ref)
	}
	return s.write(job, r, true, st.Now)
}

// Forget removes the pin prev (the verified record of the stored job)
// records and every governor-owned key (the seal included), and leaves
// Stop alone: the job leaves the governor's queue for good.
func Forget(job *api.Job, prev Record) {
	RemovePin(job, prev.Pin)
	job.Meta = StripOwned(job.Meta)
}

// carried is prev without the per-state times, stamped for this write.
func carried(prev Record, st Stamp) Record {
	r := Record{QueuedAt: prev.QueuedAt, Requeues: prev.Requeues, RequeuedAt: prev.RequeuedAt,
		PreemptedBy: append([]string(nil), prev.PreemptedBy...), Epoch: st.Epoch, SubmittedBy: prev.SubmittedBy}
	if st.SubmittedBy != "" {
		r.SubmittedBy = st.SubmittedBy
	}
	if len(r.PreemptedBy) == 0 {
		r.PreemptedBy = nil
	}
	return r
}

// errNoJobID refuses to seal a job without an ID.
var errNoJobID = errors.New("job has no ID")

// write replaces the job's governor-owned meta with r, sets Stop and
// seals.
func (s *Sealer) write(job *api.Job, r Record, stop bool, now time.Time) error {
	if s == nil || len(s.key) == 0 {
		return ErrNoKey
	}
	if job.ID == nil || *job.ID == "" {
		return errNoJobID
	}
	r.PreemptedBy = s.refs(r.PreemptedBy) // prev may name preemptors by key (cluster.RecordOf)
	meta := StripOwned(job.Meta)
	if meta == nil {
		meta = map[string]string{}
	}
	for k, v := range r.meta() {
		meta[k] = v
	}
	job.Meta = meta
	job.Stop = &stop
	meta[Seal] = s.seal(job, now)
	return nil
}
