package cluster

import (
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// ConvertJob converts a job whose governor record nobody verified, such
// as a caller's submission, into the engine's view: its allot.* record
// counts for nothing (ConvertStored converts jobs as Nomad stores them).
// It assumes the cluster demands every submitter token (the zero
// jobmeta.Tokens); Store.NeedsSubmitterToken knows the cluster's settings.
func ConvertJob(j *api.Job) *engine.Job { return convertJob(j, jobmeta.Record{}, jobmeta.Tokens{}) }

// convertJob converts j with rec as its governor record, on a cluster
// that demands tokens of submitters (engine.Job.NeedsToken).
func convertJob(j *api.Job, rec jobmeta.Record, tokens jobmeta.Tokens) *engine.Job {
	// The class is allot.class cut to jobmeta.MaxShown characters (marked
	// "…"), so a hostile class name is never repeated whole in a verdict,
	// the queue or the decisions; governor/config refuses longer class
	// names, so a cut name is an unknown class.
	out := &engine.Job{
		Namespace:   str(j.Namespace, api.DefaultNamespace),
		ID:          str(j.ID, ""),
		Class:       jobmeta.Shown(j.Meta[jobmeta.Class]),
		State:       jobState(j, rec),
		Version:     u64(j.JobModifyIndex),
		Dead:        dead(j),
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
	applyRecord(out, j, rec)
	out.NoPin = noPin(j)
	out.NeedsToken = tokens.Needs(j)
	for _, tg := range canonicalGroups(j) {
		out.Groups = append(out.Groups, convertGroup(tg))
	}
	return out
}

// dead reads Nomad's job status "dead", except where it is not yet
// true. Nomad 1.6.1 stores a registration in two transactions at one
// Raft index (fsm applyUpsertJob: the job, then its evaluation), and the
// job's status in the first is computed without the new evaluation: a
// job registered again to run after all its earlier allocations and
// evaluations finished (a held job the governor admits, a requeued victim
// admitted again) reads "dead" until the second transaction makes it
// "pending". That status carries the registration's own index
// (ModifyIndex == JobModifyIndex); any later status change has a higher
// ModifyIndex. Read as dead, the job's reservation would vanish between
// the two events and its capacity look free.
func dead(j *api.Job) bool {
	if j.Status == nil || *j.Status != "dead" {
		return false
	}
	running := j.Stop == nil || !*j.Stop
	return !(running && j.ModifyIndex != nil && j.JobModifyIndex != nil && *j.ModifyIndex == *j.JobModifyIndex)
}

func constraints(cs []*api.Constraint) []engine.Constraint {
	var out []engine.Constraint
	for _, c := range cs {
		out = append(out, engine.Constraint{LTarget: c.LTarget, Operand: c.Operand, RTarget: c.RTarget})
	}
	return out
}

// ConvertAlloc converts an allocation. One Nomad no longer wants to run
// (desired status stop or evict) is kept as Stopping until its client
// reports it terminal: Nomad 1.6.1's scheduler (AllocsFit,
// ProposedAllocs) counts an allocation's resources until its client
// status is terminal, so a preemption victim still holds its devices
// while it checkpoints and stops. It returns nil for an allocation that
// holds nothing and does not count for its job: stopped and finished.
func ConvertAlloc(a *api.Allocation) *engine.Alloc {
	stopping := a.DesiredStatus != api.AllocDesiredStatusRun
	if stopping && terminal(a.ClientStatus) {
		return nil
	}
	out := &engine.Alloc{ID: a.ID, Namespace: a.Namespace, JobID: a.JobID, Group: a.TaskGroup, NodeID: a.NodeID,
		Live: !stopping && !terminal(a.ClientStatus), Stopping: stopping, Complete: a.ClientStatus == api.AllocClientStatusComplete,
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
	g := engine.DeviceGroup{Vendor: d.Vendor, Type: d.Type, Model: d.Name, Instances: len(d.Instances), Attributes: map[string]string{}}
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
