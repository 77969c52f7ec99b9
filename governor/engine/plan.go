package engine

import (
	"time"

	"github.com/allot-sh/allot/governor/quota"
)

// Action is what a decision asks the actuator to do.
type Action int

const (
	// Admit releases a held job: Stop=false, allot.state=admitted.
	Admit Action = iota
	// Hold stops a job and queues it: Stop=true, allot.state=queued.
	Hold
	// Forget takes a held job a user stopped out of the queue: it stays
	// stopped and loses allot.state, so it is no longer held.
	Forget
	// Requeue stops a job the governor admitted (or a direct job) and
	// queues it again at its original queued-at with allot.requeues + 1:
	// preemption victims and gang timeouts.
	Requeue
	// Stop deregisters (without purge) a job the governor cannot hold: a
	// dispatched child, which Nomad 1.6.1 cannot update, that is over its
	// tenant's limit or chosen as a preemption victim. It is not queued
	// again; whoever dispatched it dispatches it again.
	Stop
	// Unpin removes the governor's placement pin (Decision.Nodes of an
	// earlier Admit) from an admitted job that Nomad cannot place where
	// it was pinned (Job.Pinned and Job.Blocked): the job stays admitted
	// and Nomad places the rest anywhere it fits. Removing a constraint
	// keeps running allocations in place.
	Unpin
)

// String names the action.
func (a Action) String() string {
	return [...]string{"admit", "hold", "forget", "requeue", "stop", "unpin"}[a]
}

// Causes of a Requeue decision (the reason label of
// allot_preemptions_total).
const (
	// CauseReclaim: a tenant below its nominal quota takes back capacity
	// another tenant of its cohort borrowed.
	CauseReclaim = "reclaim"
	// CausePriority: a higher class of the same tenant preempts a lower.
	CausePriority = "priority"
	// CauseQueueOrder: a tenant's starved head takes back the place of
	// jobs of its own tenant and class that were queued after it and
	// admitted while it waited (passedHead).
	CauseQueueOrder = "queue-order"
	// CauseGangTimeout: an admitted job's allocations did not all start
	// within the gang timeout.
	CauseGangTimeout = "gang-timeout"
)

// Decision is one change the actuator must apply to one job.
type Decision struct {
	Action    Action
	Namespace string
	JobID     string
	// Version is the JobModifyIndex the decision was made against.
	Version  uint64
	Class    string
	Priority int
	// QueuedAt is the queue time to record (kept across holds).
	QueuedAt time.Time
	Reason   string
	// Cause says why a Requeue happens (Cause* constants).
	Cause string `json:",omitempty"`
	// Preemptor is the "ns/id" of the job a preemption victim makes room
	// for.
	Preemptor string `json:",omitempty"`
	// LostWork is the work a victim loses: per live allocation, the time
	// since its last checkpoint (or its start), summed.
	LostWork time.Duration `json:",omitempty"`
	// Nodes pins an Admit to the nodes the engine's fit packed the job's
	// allocations onto: per task group name, the sorted, distinct IDs of
	// those nodes. The actuator writes it as the group constraint
	// ${node.unique.id} set_contains_any <ids> (recorded in the sealed
	// record, removed again on hold, requeue, forget and unpin), so Nomad
	// places the job where the engine reserved room for it and keeps
	// whole nodes free for gangs. Empty: no pin (Config.Placement
	// "nomad", system jobs, jobs with live allocations, placement rules
	// the engine does not model: Job.NoPin).
	Nodes map[string][]string `json:",omitempty"`
}

// Preemption records one preemptor and the victims chosen for it.
type Preemption struct {
	Namespace string
	JobID     string
	Class     string
	Cause     string
	Victims   []Victim
	Reason    string
}

// Victim is one job a preemption requeues.
type Victim struct {
	Namespace string
	JobID     string
	Class     string
	LostWork  time.Duration
}

// Check is one admission check of a job with its numbers. Text renders
// it for people.
type Check struct {
	// Name is class, type, backoff, limit, quota, fit, order or runtime.
	Name string
	OK   bool
	// Permanent marks a failing check that no change of usage or free
	// capacity can make pass (a job that fits no node of its pool even
	// empty, one that needs more than its tenant's limit or than its
	// nominal quota plus all its cohort could lend, a system job where
	// they are refused): such a job blocks no one and preempts no one.
	Permanent bool `json:",omitempty"`
	// Detail explains class, fit and order checks.
	Detail string `json:",omitempty"`
	// Tenant and Cohort name whose numbers limit and quota checks show;
	// an order check names the Cohort whose lending a borrow hold holds
	// (borrowhold.go), none when a pool's reservation holds the job.
	Tenant string `json:",omitempty"`
	Cohort string `json:",omitempty"`
	// Amounts holds the numbers of limit and quota checks, by resource.
	Amounts []Amount `json:",omitempty"`
	// MetaErr is the namespace's quota meta error, when there is one.
	MetaErr string `json:",omitempty"`
}

// Amount is one resource's numbers in a limit or quota check.
type Amount struct {
	Resource string
	// Need is what the job asks for; Used what the tenant uses already.
	Need, Used int64
	// Cap is the limit or nominal quota.
	Cap int64
	// Borrowable is what the cohort can still lend; -1 when the request
	// fits the nominal quota without borrowing.
	Borrowable int64
	Over       bool
	// Never marks a need that no usage of others can make room for: above
	// the limit, or above the nominal quota plus all the cohort could
	// ever lend. It makes the check Permanent.
	Never bool `json:",omitempty"`
}

// Verdict explains where one governed job stands after a cycle.
type Verdict struct {
	Namespace string
	JobID     string
	Class     string
	State     State
	QueuedAt  time.Time
	// Position is the 1-based place in the whole queue and in the
	// tenant's queue; zero for jobs not queued.
	Position       int
	TenantPosition int
	// Reason is the first failing check, or why the job was admitted.
	Reason string
	Checks []Check
	// Replaces counts the live allocations of the job's running version
	// that this version replaces (their shape changes): an update weighed
	// by what it adds on top of what it keeps (Base.Decide). When such an
	// update is not admitted, the proxy must refuse it rather than
	// register it held, which would stop the running version.
	Replaces int `json:",omitempty"`
	// Nodes is Decision.Nodes for a job this decision admits (the proxy's
	// path, Base.Decide): the pin its write must carry.
	Nodes map[string][]string `json:",omitempty"`
}

// Failed returns the verdict's first failing check; nil when every check
// passed (or there is no verdict: a nil v).
func (v *Verdict) Failed() *Check {
	if v == nil {
		return nil
	}
	return firstFailed(v.Checks)
}

// TenantStatus is a tenant's accounting after a cycle.
type TenantStatus struct {
	Tenant
	// Usage is what the tenant's live allocations plus reservations for
	// admitted-but-unplaced allocations hold, after this plan.
	Usage quota.Vector
	// Queued counts the tenant's held jobs after this plan.
	Queued int
	// DominantShare is the weighted dominant-resource share after this
	// plan (shares are recomputed after each admission of the walk).
	DominantShare float64
}

// PoolWait counts a pool's queued jobs that wait for capacity; First is
// the first of them in queue order ("ns/id").
type PoolWait struct {
	Count int
	First string
}

// Plan is the result of one cycle.
type Plan struct {
	Now       time.Time
	Decisions []Decision
	// Queue lists the jobs still queued after the plan, in queue order.
	Queue []Verdict
	// Verdicts holds a verdict for every governed job, by "ns/id".
	Verdicts map[string]*Verdict
	Tenants  []TenantStatus
	// Starving maps a node pool to the "ns/id" of its starving queue head,
	// whose reservation later jobs of the pool may only start beside.
	Starving map[string]string
	// Waiting maps a node pool to its queued jobs that wait for
	// capacity (first failing check fit, quota or order, not permanent):
	// the proxy leaves a submission to the next cycle while any wait
	// (Plan.HeldBackBy).
	Waiting map[string]PoolWait `json:",omitempty"`
	// Reservations lists the starving heads' reservations.
	Reservations []Reservation `json:",omitempty"`
	// BorrowHolds lists the cohorts whose lending a starved head holds
	// (borrowhold.go): no other job of the cohort may borrow past its
	// tenant's fair share of the cohort.
	BorrowHolds []BorrowHold `json:",omitempty"`
	// Preemptions lists the preemptions this plan decides; their victims
	// appear in Decisions as Requeue.
	Preemptions []Preemption
	// Claims holds, by "ns/id", when each job still queued after the
	// plan became a claim (its tenant within its nominal quota with it):
	// the caller passes it back as the next Snapshot.Claims (claims.go).
	Claims map[string]time.Time `json:",omitempty"`
	// Taken holds, by victim tenant and preemptor tenant, when the
	// preemptor's latest preemption within the last 5 minutes requeued
	// the victim's jobs (this plan's and the snapshot's): the caller
	// passes it back as the next Snapshot.Taken (taken.go).
	Taken map[string]map[string]time.Time `json:",omitempty"`
	// MoveHolds holds, by "ns/id", the nodes a move emptied for a head
	// the plan leaves queued, and when: the caller passes it back as the
	// next Snapshot.MoveHolds (moveholds.go).
	MoveHolds map[string]MoveHold `json:",omitempty"`
}

// Decision returns the decision for job ns/id, if the plan has one.
func (p *Plan) Decision(ns, id string) (Decision, bool) {
	for _, d := range p.Decisions {
		if d.Namespace == ns && d.JobID == id {
			return d, true
		}
	}
	return Decision{}, false
}
