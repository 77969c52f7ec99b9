// Package engine is the governor's pure decision core: from a snapshot of
// the cluster (tenants, nodes, allocations, jobs) and the time, it computes
// a plan of admissions and holds, each with a reason a person can read.
// It performs no I/O; the actuator applies its plans.
package engine

import (
	"time"

	"github.com/allot-sh/allot/governor/quota"
)

// State is where a job stands in the governor's lifecycle.
type State int

const (
	// Direct jobs run under Nomad without the governor having admitted
	// them: registered straight to Nomad, or re-run by a user.
	Direct State = iota
	// Queued jobs are held: Stop is true and allot.state is queued.
	Queued
	// Admitted jobs carry allot.state=admitted and are not stopped.
	Admitted
	// Stopped jobs were stopped by a user; the governor ignores them.
	Stopped
)

// String names the state.
func (s State) String() string {
	return [...]string{"direct", "queued", "admitted", "stopped"}[s]
}

// Job is what the engine knows of a Nomad job.
type Job struct {
	Namespace string
	ID        string
	// Class is the job's allot.class; empty means the tenant's default.
	Class string
	State State
	// QueuedAt is allot.queued-at; zero for jobs never queued.
	QueuedAt time.Time
	// SubmittedAt is when Nomad last accepted the job's spec.
	SubmittedAt time.Time
	// Version is the JobModifyIndex the decision is made against; the
	// actuator writes with it as EnforceIndex.
	Version uint64
	// Dead tells whether Nomad reports the job dead (finished).
	Dead bool
	// Dispatched marks a child of a parameterized job. Nomad 1.6.1 cannot
	// update it through its HTTP API, so the governor never holds it: one
	// over a limit, or chosen as a preemption victim, is stopped (Stop)
	// instead.
	Dispatched bool
	// System marks a system or sysbatch job: one allocation of each group
	// on every eligible node, however many its count says.
	System bool
	// Priority is the job's Nomad priority.
	Priority int
	// NeedsToken marks a job Nomad may refuse to register without its
	// submitter's Vault or Consul token (jobmeta.Tokens.Needs with the cluster's settings): the
	// governor cannot hold or requeue it, so it is never a victim.
	NeedsToken bool
	// Reserved marks a job the proxy has just admitted, before Nomad
	// stored it (Store.PutEngineJob): it is never dead and none of the
	// job's finished allocations count as placed for it.
	Reserved bool
	// StoppedByUser marks a held job that a user stopped (nomad job stop)
	// after its latest version: it leaves the queue and never runs.
	StoppedByUser bool
	// Blocked marks a job Nomad holds a blocked evaluation for at its
	// current version: Nomad's scheduler found no room for some of its
	// allocations and waits for capacity. An admitted job keeps its
	// reservation; its verdict says Nomad has not placed it.
	Blocked bool
	// Pinned marks a job whose stored version carries the governor's
	// placement pin (the verified record says so; Decision.Nodes).
	Pinned bool
	// NoPin marks a job with placement rules or preferences the engine
	// does not model (spread blocks, affinities, distinct_hosts,
	// distinct_property): the engine never pins it, Nomad places it as
	// it likes.
	NoPin bool
	// AdmittedAt is allot.admitted-at; the gang timeout counts from it.
	AdmittedAt time.Time
	// Requeues is allot.requeues: how often the governor stopped the job
	// after admitting it (preemption, gang timeout).
	Requeues int
	// RequeuedAt is allot.requeued-at, when the job was last requeued;
	// its back-off counts from it.
	RequeuedAt time.Time
	// PreemptedBy is allot.preempted-by: the "ns/id" of the jobs whose
	// preemptions requeued this job, space-separated, most recent last
	// (Nomad IDs hold no spaces). The job never preempts any of them.
	PreemptedBy string
	// NoGang is true when allot.gang is "false": the job's allocations
	// need not all run together, so the gang timeout does not apply.
	NoGang bool
	// MaxRuntime is allot.max-runtime: the longest the job may run once
	// started (zero: none set). Reservations count on it.
	MaxRuntime time.Duration
	// MaxRuntimeErr says why allot.max-runtime could not be read ("":
	// it could, or is not set): such a job is held with that reason.
	MaxRuntimeErr string
	// Estimate is a learned run time for a job without MaxRuntime (from
	// finished jobs of its tenant and name); zero when unknown.
	Estimate    time.Duration
	NodePool    string
	Datacenters []string
	Constraints []Constraint
	Groups      []Group
}

// Key returns "namespace/id".
func (j *Job) Key() string { return j.Namespace + "/" + j.ID }

// Pool returns the node pool j runs in: its NodePool, or "default" when
// it names none (PoolName).
func (j *Job) Pool() string { return PoolName(j.NodePool) }

// PoolName returns the node pool a job's NodePool or a node's Pool names:
// pool itself, or "default" when it is empty, as Nomad reads it. It is
// the one place of that rule.
func PoolName(pool string) string {
	if pool == "" {
		return "default"
	}
	return pool
}

// Running tells whether j runs under Nomad now (admitted or direct, not
// finished); false for nil. An update of a running job that is not
// admitted must be refused, never registered held: a hold stops the
// version that runs (Base.Decide weighs the update by what it adds on
// top of what it keeps; Verdict.Replaces counts the allocations whose
// shape it changes).
func (j *Job) Running() bool {
	return j != nil && (j.State == Admitted || j.State == Direct) && !j.Dead
}

// Group is one task group: Count allocations of the summed task resources.
type Group struct {
	Name     string
	Count    int
	CPU      int64
	MemoryMB int64
	// Cores is true when a task reserves whole cores: Nomad then sets the
	// allocation's CPU from the cores, so CPU says nothing of its shape.
	Cores       bool
	Devices     []DeviceRequest
	Constraints []Constraint
	// SavesOnStop is true when every task of the group that holds devices
	// (every task, when none does) runs under Allot's ckpt driver, which
	// asks the task to checkpoint before each stop: a preemption then
	// throws away none of its work. The engine still judges a victim by
	// its last checkpoint (FairLostWork: the task may not save in time);
	// only the nominal-first reclaim ranking counts on the save
	// (setCost.thrown).
	SavesOnStop bool
}

// DeviceRequest asks for Count instances of one device group. Name is
// "type", "vendor/type" or "vendor/type/model" as in a jobspec.
type DeviceRequest struct {
	Name        string
	Count       int
	Constraints []Constraint
}

// Constraint is a Nomad constraint (LTarget Operand RTarget).
type Constraint struct {
	LTarget string
	Operand string
	RTarget string
}

// Node is a client node and its allocatable capacity (reserved resources
// already subtracted).
type Node struct {
	ID         string
	Name       string
	Pool       string
	Datacenter string
	Class      string
	// Ready is true when the node is ready and eligible for scheduling.
	Ready      bool
	Attributes map[string]string
	Meta       map[string]string
	CPU        int64
	MemoryMB   int64
	Devices    []DeviceGroup
}

// DeviceGroup is one device group of a node with its healthy instances.
type DeviceGroup struct {
	Vendor, Type, Model string
	Healthy             int
	// Instances counts all instances, healthy or not (capacity reports;
	// placement uses Healthy). Zero when unknown: count Healthy.
	Instances int
	// Attributes are rendered as Nomad shows them ("81920 MiB", "9.0").
	Attributes map[string]string
}

// savesOnStop reports whether every group of j saves a checkpoint when
// stopped (Group.SavesOnStop).
func (j *Job) savesOnStop() bool {
	for _, g := range j.Groups {
		if !g.SavesOnStop {
			return false
		}
	}
	return len(j.Groups) > 0
}

// ID returns "vendor/type/model".
func (d *DeviceGroup) ID() string { return d.Vendor + "/" + d.Type + "/" + d.Model }

// Alloc is one allocation that Nomad wants to run (desired status run).
type Alloc struct {
	ID        string
	Namespace string
	JobID     string
	Group     string
	NodeID    string
	// Live is false once the allocation's client status is terminal
	// (complete, failed, lost); a live allocation holds its resources.
	Live bool
	// Complete is true once the allocation finished successfully; with
	// CreateIndex at or above the job's Version it belongs to the job's
	// current version, which Nomad does not run again.
	Complete    bool
	CreateIndex uint64
	CPU         int64
	MemoryMB    int64
	// Devices counts the allocated instances by "vendor/type/model".
	Devices map[string]int
	// Stopping is true while Nomad wants the allocation stopped (desired
	// status stop or evict) but its client has not reported it terminal:
	// Nomad's scheduler still counts what it holds on its node (it frees
	// an allocation's resources only at a terminal client status), so the
	// engine does too, while the allocation no longer counts as placed for
	// its job nor in its tenant's usage. Live is false for it.
	Stopping bool
	// Started is true once the allocation's client status left pending
	// (running or complete): the gang timeout waits for it.
	Started bool
	// StartedAt is when the allocation was created; work since then is
	// lost on preemption when it never checkpointed.
	StartedAt time.Time
	// LastCheckpoint is when the newest checkpoint it saved was written
	// (the ckpt driver's events, contract/ckptevent); zero when it never
	// saved one.
	LastCheckpoint time.Time
}

// holds tells whether allocation a occupies its node's resources: it is
// live, or Nomad is stopping it and its client has not finished yet.
func (a *Alloc) holds() bool { return a.Live || a.Stopping }

// Tenant is one governed namespace as the engine sees it.
type Tenant struct {
	quota.Tenant
	// Err is the validation error of the namespace's current meta; the
	// quota is then the last valid one (or zero).
	Err error
}

// Class is a priority class.
type Class struct {
	Priority    int
	Preemptible bool
	Restricted  bool
}

// Config holds the engine's tunables.
type Config struct {
	Classes map[string]Class
	// StarvationTimeout is how long smaller jobs may pass a queue head
	// that does not fit.
	StarvationTimeout time.Duration
	// DisablePreemption turns reclaim and within-tenant preemption off.
	DisablePreemption bool
	// BackoffBase and BackoffCap bound how long a requeued job waits
	// before it may be admitted again: base·2^(requeues-1), at most cap.
	// Zero base: no back-off.
	BackoffBase, BackoffCap time.Duration
	// GangTimeout is how long an admitted job may wait for all its
	// allocations to start before it is requeued; zero disables it.
	GangTimeout time.Duration
	// MoveMinRun is how long a job runs before a move (move.go) may take
	// it; zero means MoveMinRun (10 minutes).
	MoveMinRun time.Duration
	// FairMinRun is how long a job runs before a fairness preemption
	// (fairpreempt.go) may take it; zero means FairMinRun (2 minutes).
	FairMinRun time.Duration
	// FairShareGap is how far above the preemptor's tenant's weighted
	// share, after its job, a fairness victim's tenant's share must stay
	// after losing the victim; zero means FairShareGap (0.1).
	FairShareGap float64
	// FairClasses is which classes a fairness preemption may take:
	// FairClassesNotAbove (the default, "") no higher than the
	// preemptor's, FairClassesAny any preemptible class.
	FairClasses string
	// FairShareRule is the rule a fairness preemption between borrowers
	// follows: FairRuleGap (the default, "") or FairRuleEntitlement
	// (entitlement.go).
	FairShareRule string
	// RequeueRest lets a job requeued by preemption rest once it is
	// admitted again: for RequeueRest·2^(requeues−1), at most
	// RequeueRestMax, only a reclaim by another tenant may take it
	// (rest.go). Zero (the default): no rest.
	RequeueRest time.Duration
	// GovernSystemJobs admits system and sysbatch jobs of governed
	// namespaces like any other job, counted per eligible node; false
	// (the default, config system_jobs = "refuse") holds them with a
	// reason and never admits them.
	GovernSystemJobs bool
	// Runtimes, when set, estimates the run time of a job that sets no
	// allot.max-runtime and carries no Estimate: the governor's learned
	// run times (governor/estimate). It returns zero when it knows none.
	// Reservations and backfill use it (Config.RuntimeOf).
	Runtimes func(j *Job) time.Duration
	// Placement is how admitted jobs are placed: PlacementPack (the
	// default, "") pins each admission to the nodes the engine's fit
	// packed it onto (Decision.Nodes); PlacementNomad leaves placement
	// to Nomad's scheduler.
	Placement string
	// Reclaim is which borrowers a reclaim may take: ReclaimAny (the
	// default, "") takes any, those with fresh checkpoints first, so a
	// tenant gets its nominal quota at once; ReclaimCheckpointed (the
	// governor's default) takes only borrowers that save a checkpoint
	// when stopped or lose at most FairLostWork, and a tenant within its
	// nominal otherwise waits for a borrower to checkpoint or end, for at
	// most ReclaimMaxWait.
	Reclaim string
	// ReclaimMaxLoss bounds what a reclaim throws away with ReclaimAny:
	// it takes no borrower whose stop would lose more than ReclaimMaxLoss
	// of device time per device instance the claim asks for (an 8-GPU
	// claim with 24h: at most 192 device-hours of one borrower's work).
	// Such a borrower keeps running and the claim waits for it to
	// checkpoint or end, or for other capacity, for at most
	// ReclaimMaxWait. Borrowers that lose at most FairLostWork are always
	// taken; zero (the default) bounds nothing (preempt.go, reclaimable).
	ReclaimMaxLoss time.Duration
	// QueueOrder is how the queue orders jobs of different tenants:
	// QueueOrderClass (the default, "") by class priority first, then the
	// tenants' weighted shares; QueueOrderShare by the tenants' shares
	// first, each tenant's own jobs still by class (queueorder.go).
	QueueOrder string
}

// Placement modes (Config.Placement; governor config placement).
const (
	PlacementPack  = "pack"
	PlacementNomad = "nomad"
)

// Reclaim modes (Config.Reclaim; governor config reclaim).
const (
	ReclaimAny          = "any"
	ReclaimCheckpointed = "checkpointed"
)

// ReclaimWithBound is the reclaim mode in force given the mode a
// configuration names (modeSet: whether it names one) and its
// Config.ReclaimMaxLoss bound: a bound set without a mode means
// ReclaimAny, whose bound it is (the governor's default,
// ReclaimCheckpointed, takes no borrower the bound would spare);
// otherwise mode. The governor's config file and allotctl sim's flags
// both read a lone bound so.
func ReclaimWithBound(mode string, modeSet bool, bound time.Duration) string {
	if !modeSet && bound > 0 {
		return ReclaimAny
	}
	return mode
}

// ReclaimMaxWait is how long a claim waits for borrowers that
// Config.ReclaimMaxLoss or ReclaimCheckpointed spares; it then takes any
// borrower.
const ReclaimMaxWait = 72 * time.Hour

// Snapshot is the engine's whole input besides Config.
type Snapshot struct {
	Now time.Time
	// Tenants holds the governed namespaces; jobs of other namespaces are
	// not governed and only occupy capacity.
	Tenants map[string]*Tenant
	Nodes   []*Node
	Allocs  []*Alloc
	Jobs    []*Job
	// Claims is the previous plan's Plan.Claims: when each queued job
	// that was a claim became one, which ReclaimMaxWait counts from
	// (claims.go). A caller that does not carry it (nil) starts every
	// claim's clock anew each cycle, so the limit never fires.
	Claims map[string]time.Time
	// Taken is the previous plan's Plan.Taken: which tenants' preemptions
	// requeued each tenant's jobs within the last 5 minutes, and when
	// (taken.go). A caller that does not carry it (nil) leaves the
	// take-back rule to the jobs' allot.preempted-by alone, which dates
	// only each job's latest preemption.
	Taken map[string]map[string]time.Time
	// MoveHolds is the previous plan's Plan.MoveHolds: the nodes a move
	// emptied for its head, reserved for it before the walk while it is
	// queued, for at most 5 minutes (moveholds.go). A caller that does not
	// carry it (nil) leaves a moved-for head to the walk's order.
	MoveHolds map[string]MoveHold
}
