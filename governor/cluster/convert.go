package cluster

import (
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/engine"
)

// Job meta keys of the job contract (ARCHITECTURE.md).
const (
	MetaClass      = "allot.class"
	MetaGang       = "allot.gang"
	MetaState      = "allot.state"
	MetaQueuedAt   = "allot.queued-at"
	MetaAdmittedAt = "allot.admitted-at"
	MetaRequeues   = "allot.requeues"
	// MetaRequeuedAt and MetaPreemptedBy extend the job contract for
	// preemption: when the job was last requeued (its back-off counts
	// from it) and which job's preemption requeued it.
	MetaRequeuedAt  = "allot.requeued-at"
	MetaPreemptedBy = "allot.preempted-by"
	StateQueued     = "queued"
	StateAdmitted   = "admitted"
)

// JobState derives the governor's view of a job from its stop flag and
// meta. Held = Stop && allot.state=queued; a job a user stopped is
// Stopped; periodic/parameterized parents, which never run allocations
// themselves, are Stopped too. System and sysbatch jobs are governed like
// any other (engine.Job.System).
func JobState(j *api.Job) engine.State {
	stop := j.Stop != nil && *j.Stop
	state := j.Meta[MetaState]
	switch {
	case stop && state == StateQueued:
		return engine.Queued
	case stop:
		return engine.Stopped
	case j.IsPeriodic() || j.IsParameterized():
		return engine.Stopped
	case state == StateAdmitted:
		return engine.Admitted
	}
	return engine.Direct
}

// ConvertJob converts a Nomad job into the engine's view.
func ConvertJob(j *api.Job) *engine.Job {
	out := &engine.Job{
		Namespace:   str(j.Namespace, api.DefaultNamespace),
		ID:          str(j.ID, ""),
		Class:       j.Meta[MetaClass],
		State:       JobState(j),
		Version:     u64(j.JobModifyIndex),
		Dead:        j.Status != nil && *j.Status == "dead",
		Dispatched:  j.Dispatched,
		System:      isSystem(j),
		Priority:    priority(j),
		NodePool:    str(j.NodePool, ""),
		Datacenters: j.Datacenters,
		Constraints: constraints(j.Constraints),
	}
	if j.SubmitTime != nil {
		// Event payloads carry numbers as float64: keep milliseconds only,
		// so a job read from an event equals the same job read by ID.
		out.SubmittedAt = time.Unix(0, *j.SubmitTime).UTC().Truncate(time.Millisecond)
	}
	if t, err := time.Parse(time.RFC3339Nano, j.Meta[MetaQueuedAt]); err == nil {
		out.QueuedAt = t
	}
	convertRequeue(j, out)
	for _, tg := range canonicalGroups(j) {
		out.Groups = append(out.Groups, convertGroup(tg))
	}
	return out
}

// convertRequeue reads the admission and requeue meta; malformed values
// count as absent (zero requeues, no back-off).
func convertRequeue(j *api.Job, out *engine.Job) {
	if t, err := time.Parse(time.RFC3339Nano, j.Meta[MetaAdmittedAt]); err == nil {
		out.AdmittedAt = t
	}
	if t, err := time.Parse(time.RFC3339Nano, j.Meta[MetaRequeuedAt]); err == nil {
		out.RequeuedAt = t
	}
	if n, err := strconv.Atoi(j.Meta[MetaRequeues]); err == nil && n > 0 {
		out.Requeues = n
	}
	out.PreemptedBy = j.Meta[MetaPreemptedBy]
	out.NoGang = strings.EqualFold(strings.TrimSpace(j.Meta[MetaGang]), "false")
}

// QueuedAt returns a job's allot.queued-at, if it is set and valid.
func QueuedAt(j *api.Job) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, j.Meta[MetaQueuedAt])
	return t, err == nil
}

func constraints(cs []*api.Constraint) []engine.Constraint {
	var out []engine.Constraint
	for _, c := range cs {
		out = append(out, engine.Constraint{LTarget: c.LTarget, Operand: c.Operand, RTarget: c.RTarget})
	}
	return out
}

// ConvertAlloc converts an allocation; it returns nil for allocations
// Nomad no longer wants to run (desired status other than run).
func ConvertAlloc(a *api.Allocation) *engine.Alloc {
	if a.DesiredStatus != api.AllocDesiredStatusRun {
		return nil
	}
	out := &engine.Alloc{ID: a.ID, Namespace: a.Namespace, JobID: a.JobID, Group: a.TaskGroup, NodeID: a.NodeID,
		Live: !terminal(a.ClientStatus), Complete: a.ClientStatus == api.AllocClientStatusComplete,
		CreateIndex: a.CreateIndex, Devices: map[string]int{},
		Started: a.ClientStatus == api.AllocClientStatusRunning || a.ClientStatus == api.AllocClientStatusComplete}
	out.StartedAt = tasksStarted(a)
	if ar := a.AllocatedResources; ar != nil {
		for _, t := range ar.Tasks {
			out.CPU += t.Cpu.CpuShares
			out.MemoryMB += t.Memory.MemoryMB
			for _, d := range t.Devices {
				out.Devices[d.Vendor+"/"+d.Type+"/"+d.Name] += len(d.DeviceIDs)
			}
		}
	}
	return out
}

// tasksStarted is when the allocation's first task started (zero before
// any did): work since then is what a preemption loses when the task
// never checkpointed.
func tasksStarted(a *api.Allocation) time.Time {
	var first time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && !ts.StartedAt.IsZero() && (first.IsZero() || ts.StartedAt.Before(first)) {
			first = ts.StartedAt
		}
	}
	return first.UTC()
}

func terminal(status string) bool {
	switch status {
	case api.AllocClientStatusComplete, api.AllocClientStatusFailed, api.AllocClientStatusLost:
		return true
	}
	return false
}

// ConvertNode converts a node; capacity is what Nomad lets allocations
// use (reserved resources subtracted), devices count healthy instances.
func ConvertNode(n *api.Node) *engine.Node {
	out := &engine.Node{ID: n.ID, Name: n.Name, Pool: n.NodePool, Datacenter: n.Datacenter, Class: n.NodeClass,
		Ready:      n.Status == api.NodeStatusReady && n.SchedulingEligibility == api.NodeSchedulingEligible && !n.Drain,
		Attributes: n.Attributes, Meta: n.Meta}
	if r := n.NodeResources; r != nil {
		out.CPU, out.MemoryMB = r.Cpu.CpuShares, r.Memory.MemoryMB
		for _, d := range r.Devices {
			out.Devices = append(out.Devices, convertDevice(d))
		}
	}
	if r := n.ReservedResources; r != nil {
		out.CPU -= int64(r.Cpu.CpuShares)
		out.MemoryMB -= int64(r.Memory.MemoryMB)
	}
	return out
}

func convertDevice(d *api.NodeDeviceResource) engine.DeviceGroup {
	g := engine.DeviceGroup{Vendor: d.Vendor, Type: d.Type, Model: d.Name, Attributes: map[string]string{}}
	for _, inst := range d.Instances {
		if inst.Healthy {
			g.Healthy++
		}
	}
	for k, v := range d.Attributes {
		if v != nil {
			g.Attributes[k] = v.String()
		}
	}
	return g
}

func str(p *string, def string) string {
	if p == nil || *p == "" {
		return def
	}
	return *p
}

func u64[T ~int | ~uint64 | ~int64](p *T) uint64 {
	if p == nil {
		return 0
	}
	return uint64(*p)
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
