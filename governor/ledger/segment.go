package ledger

import (
	"sort"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Outcomes of a segment.
const (
	OutcomeRunning   = "running"
	OutcomeComplete  = "complete"
	OutcomeFailed    = "failed"
	OutcomeStopped   = "stopped"
	OutcomePreempted = "preempted"
	OutcomeLost      = "lost"
	// OutcomeVanished closes a segment whose allocation Nomad no longer
	// lists (garbage-collected while the governor was down): it ends at
	// its last accrual.
	OutcomeVanished = "vanished"
)

// Segment is one allocation's use of one device model ("" for an
// allocation without devices: its cpu and memory still cost). Times are
// from the tasks' own states: Start is the first task's StartedAt, End the
// last task's FinishedAt, or the last accrual while the allocation runs.
type Segment struct {
	AllocID     string
	Model       string
	Namespace   string
	JobID       string
	JobVersion  uint64
	TaskGroup   string
	Class       string
	NodePool    string
	NodeID      string
	NodeName    string
	Devices     int64
	CPUMHz      int64
	MemoryMB    int64
	Queued      time.Time
	Start       time.Time
	End         time.Time
	Open        bool
	Outcome     string
	PreemptedBy string
	Restarts    int64
	// LostWork is the run time since the last checkpoint (or since the
	// start) of an allocation stopped before it completed.
	LostWork time.Duration
	// UsedDevice is Σ utilization × Δt over the devices, from the device
	// stats Nomad collects, over UsedSampled of the segment's time.
	UsedDevice  time.Duration
	UsedSampled time.Duration
	ModifyIndex uint64
}

// DeviceSeconds is Devices × (End − Start) in seconds.
func (s Segment) DeviceSeconds() float64 {
	return float64(s.Devices) * s.End.Sub(s.Start).Seconds()
}

// Context is what a segment needs beyond the allocation: the node's pool,
// the job's class and queue time, and the allocation's last checkpoint.
// Every field may be nil.
type Context struct {
	NodePool   func(nodeID string) string
	Class      func(ns, jobID string) string
	QueuedAt   func(ns, jobID string) time.Time
	Checkpoint func(allocID string) (time.Time, bool)
	// Requeued returns when the governor last requeued the job (its
	// preemption or gang timeout stopped it) and by whom (opaque
	// reference), zero when never.
	Requeued func(ns, jobID string) (time.Time, string)
}

// requeueSlack is how long after an allocation's end the governor's
// requeue may be recorded and still be the reason it stopped.
const requeueSlack = time.Minute

// Segments derives an allocation's segments at time now: none before a
// task started, one per device model it holds (or one with model "" when
// it holds none).
func Segments(a *api.AllocationListStub, c Context, now time.Time) []Segment {
	start, end, running := span(a.TaskStates)
	if start.IsZero() {
		return nil
	}
	base := Segment{AllocID: a.ID, Namespace: a.Namespace, JobID: a.JobID, JobVersion: a.JobVersion,
		TaskGroup: a.TaskGroup, NodeID: a.NodeID, NodeName: a.NodeName, Start: start, End: end,
		Outcome: outcome(a, running), PreemptedBy: a.PreemptedByAllocation, ModifyIndex: a.ModifyIndex,
		Queued: time.Unix(0, a.CreateTime)}
	if running {
		base.Open, base.End = true, maxTime(now, start)
	}
	base.Restarts = restarts(a.TaskStates)
	c.fill(&base)
	c.requeued(&base)
	if base.Outcome == OutcomeStopped || base.Outcome == OutcomePreempted || base.Outcome == OutcomeLost {
		from := base.Start
		if cp, ok := callCheckpoint(c, a.ID); ok && cp.After(from) && cp.Before(base.End) {
			from = cp
		}
		base.LostWork = base.End.Sub(from)
	}
	devs, cpu, mem := resources(a.AllocatedResources)
	base.CPUMHz, base.MemoryMB = cpu, mem
	if len(devs) == 0 {
		return []Segment{base}
	}
	out := make([]Segment, 0, len(devs))
	for i, model := range sortedKeys(devs) {
		s := base
		s.Model, s.Devices = model, devs[model]
		if i > 0 {
			// cpu and memory belong to the allocation: its first
			// segment carries them, so they count once.
			s.CPUMHz, s.MemoryMB = 0, 0
		}
		out = append(out, s)
	}
	return out
}

func (c Context) fill(s *Segment) {
	if c.NodePool != nil {
		s.NodePool = c.NodePool(s.NodeID)
	}
	if c.Class != nil {
		s.Class = c.Class(s.Namespace, s.JobID)
	}
	if c.QueuedAt != nil {
		if q := c.QueuedAt(s.Namespace, s.JobID); !q.IsZero() && q.Before(s.Queued) {
			s.Queued = q
		}
	}
	if s.Queued.After(s.Start) {
		s.Queued = s.Start
	}
}

// requeued marks a stopped segment preempted when the governor requeued
// its job while it ran: Nomad's own allocation shows only a stop.
func (c Context) requeued(s *Segment) {
	if c.Requeued == nil || s.Outcome != OutcomeStopped {
		return
	}
	at, by := c.Requeued(s.Namespace, s.JobID)
	if !at.IsZero() && !at.Before(s.Start) && !at.After(s.End.Add(requeueSlack)) {
		s.Outcome, s.PreemptedBy = OutcomePreempted, by
	}
}

func callCheckpoint(c Context, id string) (time.Time, bool) {
	if c.Checkpoint == nil {
		return time.Time{}, false
	}
	return c.Checkpoint(id)
}

// span returns the first StartedAt, the last FinishedAt, and whether some
// started task has not finished.
func span(states map[string]*api.TaskState) (start, end time.Time, running bool) {
	for _, ts := range states {
		if ts == nil || ts.StartedAt.IsZero() {
			continue
		}
		if start.IsZero() || ts.StartedAt.Before(start) {
			start = ts.StartedAt
		}
		if ts.State != "dead" || ts.FinishedAt.IsZero() {
			running = true
			continue
		}
		if ts.FinishedAt.After(end) {
			end = ts.FinishedAt
		}
	}
	if !running && end.Before(start) {
		end = start
	}
	return start, end, running
}

func outcome(a *api.AllocationListStub, running bool) string {
	switch {
	case running && a.ClientStatus != api.AllocClientStatusLost:
		return OutcomeRunning
	case a.PreemptedByAllocation != "":
		return OutcomePreempted
	case a.ClientStatus == api.AllocClientStatusLost:
		return OutcomeLost
	case a.ClientStatus == api.AllocClientStatusFailed:
		return OutcomeFailed
	case a.DesiredStatus == api.AllocDesiredStatusStop || a.DesiredStatus == api.AllocDesiredStatusEvict:
		if allSucceeded(a.TaskStates) {
			return OutcomeComplete
		}
		return OutcomeStopped
	default:
		return OutcomeComplete
	}
}

// allSucceeded reports whether every task exited on its own with success
// (a stop kills tasks: Nomad marks them "Killed").
func allSucceeded(states map[string]*api.TaskState) bool {
	for _, ts := range states {
		if ts == nil || ts.Failed {
			return false
		}
		for _, e := range ts.Events {
			if e != nil && (e.Type == api.TaskKilled || e.Type == api.TaskKilling) {
				return false
			}
		}
	}
	return true
}

func restarts(states map[string]*api.TaskState) int64 {
	var n int64
	for _, ts := range states {
		if ts != nil {
			n += int64(ts.Restarts)
		}
	}
	return n
}

// resources sums devices per model id ("vendor/type/name"), cpu and memory
// over the allocation's tasks.
func resources(ar *api.AllocatedResources) (map[string]int64, int64, int64) {
	devs := map[string]int64{}
	if ar == nil {
		return devs, 0, 0
	}
	var cpu, mem int64
	for _, tr := range ar.Tasks {
		if tr == nil {
			continue
		}
		cpu += tr.Cpu.CpuShares
		mem += tr.Memory.MemoryMB
		for _, d := range tr.Devices {
			if d != nil && len(d.DeviceIDs) > 0 {
				devs[d.Vendor+"/"+d.Type+"/"+d.Name] += int64(len(d.DeviceIDs))
			}
		}
	}
	return devs, cpu, mem
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
