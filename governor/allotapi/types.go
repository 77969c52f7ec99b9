// Package allotapi holds the wire types of the governor's /allot/v1 HTTP API
// and a typed client for it (used by allotctl and the tests).
package allotapi

import "time"

// Tenant is one governed namespace with its quota and usage.
type Tenant struct {
	Namespace    string
	Cohort       string
	Weight       float64
	Classes      []string `json:",omitempty"`
	DefaultClass string
	// Quota, Limit and Lend are by resource (cpu MHz, memory MiB, device
	// counts by type or vendor/type/model).
	Quota map[string]int64
	Limit map[string]int64
	Lend  map[string]int64
	// Usage is what live allocations and admitted-but-unplaced jobs hold.
	Usage map[string]int64
	// Borrowed is usage above the nominal quota; Lent is this tenant's
	// share of what its cohort borrows (engine.LendingOf has the rule).
	Borrowed      map[string]int64
	Lent          map[string]int64
	Queued        int
	DominantShare float64
	// Error is the validation error of the namespace's current meta; the
	// last valid quota (or zero) applies meanwhile.
	Error string `json:",omitempty"`
}

// TenantList is the response of GET /allot/v1/tenants.
type TenantList struct {
	Tenants []Tenant
}

// QueueEntry is one held job.
type QueueEntry struct {
	Namespace string
	JobID     string
	Class     string
	// Position is 1-based in the whole queue, TenantPosition in the
	// tenant's queue.
	Position       int
	TenantPosition int
	QueuedAt       time.Time
	Reason         string
	// ReasonCheck is the failing check Reason renders, with its
	// structured fields, when Reason is exactly that check's text
	// ("<name>: <text>"); absent otherwise (the console renders it in the
	// reader's language).
	ReasonCheck *Check `json:",omitempty"`
	// Request is what the whole job asks for, summed over its
	// allocations: cpu MHz, memory MiB and devices by the names its device
	// blocks use.
	Request map[string]int64
}

// Queue is the response of GET /allot/v1/queue.
type Queue struct {
	// Total is the length of the whole queue; Jobs may be filtered to the
	// namespaces the caller can read.
	Total int
	Jobs  []QueueEntry
}

// Check is one admission check with its numbers. Detail is the check's
// text in English; the other fields (all optional) are its structured
// parts (engine.Check), from which a client may render it itself.
type Check struct {
	Name   string
	OK     bool
	Detail string
	// Permanent marks a failing check no change of usage or capacity can
	// make pass.
	Permanent bool `json:",omitempty"`
	// Tenant and Cohort name whose numbers limit and quota checks show;
	// a failing order check names the Cohort whose lending a borrow hold
	// holds for a starving job (none when a reservation holds the job).
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
	// Over marks a resource the check fails on.
	Over bool
	// Never marks a need no usage of others can make room for (above the
	// limit, or the nominal quota plus all the cohort could lend).
	Never bool `json:",omitempty"`
}

// Why is the response of GET /allot/v1/jobs/<ns>/<id>/why.
type Why struct {
	Namespace      string
	JobID          string
	State          string
	Class          string
	Position       int
	TenantPosition int
	QueuedAt       time.Time `json:",omitempty"`
	Reason         string
	// ReasonCheck is as in QueueEntry: the failing check Reason renders.
	ReasonCheck *Check `json:",omitempty"`
	Checks      []Check
}

// Error is the body of every error response.
type Error struct {
	Error string
}

// Class is one priority class of the governor's configuration.
type Class struct {
	Name     string
	Priority int
	// Preemptible classes may lose their jobs to reclaim or to a higher
	// class of the same tenant.
	Preemptible bool
	// Restricted classes are only for tenants whose allot.classes names
	// them.
	Restricted bool
}

// ClassList is the response of GET /allot/v1/classes, by priority
// (highest first).
type ClassList struct {
	Classes []Class
}

// Victim is one job a preemption stopped and requeued.
type Victim struct {
	Namespace string
	JobID     string
	Class     string
	// LostWorkSeconds sums, over the victim's allocations, the time since
	// their last checkpoint (or start).
	LostWorkSeconds float64
}

// Decision is one recorded preemption, requeue or hold.
type Decision struct {
	Time time.Time
	// Kind is preemption, requeue (gang timeout) or hold (a job
	// registered straight to Nomad over its tenant's limit).
	Kind string
	// Namespace and JobID name the preemptor (preemption) or the job
	// requeued or held.
	Namespace string
	JobID     string
	Class     string
	// Cause is reclaim, priority, gang-timeout or over-limit.
	Cause   string
	Reason  string
	Victims []Victim `json:",omitempty"`
}

// DecisionList is the response of GET /allot/v1/decisions, newest first.
type DecisionList struct {
	Decisions []Decision
}
