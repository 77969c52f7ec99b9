package cluster

import (
	"math"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/contract/ckptevent"
	"github.com/allot-sh/allot/governor/engine"
)

// MaxCount bounds every count the governor reads from a job (allocations
// of a group, instances of a device request) and maxAmount every
// per-task amount (MHz, MiB). A larger value is read as the bound: such a
// job never fits and never stays within a limit, so it is held, and the
// engine's arithmetic can neither overflow nor turn negative (a device
// Count is a uint64: 2^64-4 must not become -4).
const (
	MaxCount  = math.MaxInt32
	maxAmount = int64(1) << 40
)

// canonicalGroups returns the job's task groups with Nomad's defaults
// filled in, the way Nomad's agent canonicalizes a submission before it
// stores it (api.Job.Canonicalize): a group without count runs
// scaling.min (or 1) allocations, a device without count asks for one
// instance, a task without resources asks for 100 MHz and 300 MiB. It
// canonicalizes a copy of the parts it reads; j is left as it was, so a
// job read from Nomad (already canonical) and a submission are weighed
// the same.
func canonicalGroups(j *api.Job) []*api.TaskGroup {
	cp := &api.Job{Type: j.Type, TaskGroups: make([]*api.TaskGroup, 0, len(j.TaskGroups))}
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		cp.TaskGroups = append(cp.TaskGroups, copyGroup(tg))
	}
	cp.Canonicalize()
	return cp.TaskGroups
}

// copyGroup copies what canonicalGroups reads of a group: name, count,
// scaling bounds, constraints and the tasks' drivers and resources.
func copyGroup(tg *api.TaskGroup) *api.TaskGroup {
	g := &api.TaskGroup{Name: tg.Name, Count: tg.Count, Constraints: tg.Constraints}
	if tg.Scaling != nil {
		g.Scaling = &api.ScalingPolicy{Min: tg.Scaling.Min, Max: tg.Scaling.Max}
	}
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		ct := &api.Task{Name: t.Name, Driver: t.Driver, Constraints: t.Constraints}
		if r := t.Resources; r != nil {
			ct.Resources = &api.Resources{CPU: r.CPU, Cores: r.Cores, MemoryMB: r.MemoryMB}
			for _, d := range r.Devices {
				if d == nil {
					continue
				}
				cd := *d
				ct.Resources.Devices = append(ct.Resources.Devices, &cd)
			}
		}
		g.Tasks = append(g.Tasks, ct)
	}
	return g
}

// convertGroup converts a canonical task group: counts and amounts are
// clamped to [0, bound] (see MaxCount).
func convertGroup(tg *api.TaskGroup) engine.Group {
	g := engine.Group{Name: str(tg.Name, ""), Count: int(clamp(int64(deref(tg.Count)), MaxCount)), Constraints: constraints(tg.Constraints)}
	for _, t := range tg.Tasks {
		g.Constraints = append(g.Constraints, constraints(t.Constraints)...)
		if t.Resources == nil {
			continue
		}
		g.CPU = clamp(g.CPU+clamp(int64(deref(t.Resources.CPU)), maxAmount), math.MaxInt64/2)
		g.MemoryMB = clamp(g.MemoryMB+clamp(int64(deref(t.Resources.MemoryMB)), maxAmount), math.MaxInt64/2)
		if deref(t.Resources.Cores) > 0 {
			g.Cores = true
		}
		for _, d := range t.Resources.Devices {
			g.Devices = append(g.Devices, engine.DeviceRequest{Name: d.Name, Count: deviceCount(d.Count), Constraints: constraints(d.Constraints)})
		}
	}
	g.SavesOnStop = savesOnStop(tg.Tasks)
	return g
}

// savesOnStop reports whether every task that holds devices (every task,
// when none does) runs under the ckpt driver (engine.Group.SavesOnStop).
func savesOnStop(tasks []*api.Task) bool {
	judged := tasks
	if withDevices := holdingDevices(tasks); len(withDevices) > 0 {
		judged = withDevices
	}
	for _, t := range judged {
		if t.Driver != ckptevent.Driver {
			return false
		}
	}
	return len(judged) > 0
}

// holdingDevices returns the tasks that ask for devices.
func holdingDevices(tasks []*api.Task) []*api.Task {
	var out []*api.Task
	for _, t := range tasks {
		if t.Resources != nil && len(t.Resources.Devices) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// deviceCount reads a device request's count without overflow: nil is one
// (Nomad's default), anything above MaxCount is MaxCount.
func deviceCount(p *uint64) int {
	if p == nil {
		return 1
	}
	if *p > MaxCount {
		return MaxCount
	}
	return int(*p)
}

// clamp bounds n to [0, hi].
func clamp(n, hi int64) int64 {
	switch {
	case n < 0:
		return 0
	case n > hi:
		return hi
	}
	return n
}

// isSystem tells whether a job runs one allocation per eligible node.
func isSystem(j *api.Job) bool {
	return j.Type != nil && (*j.Type == api.JobTypeSystem || *j.Type == api.JobTypeSysbatch)
}

// priority is the job's priority, Nomad's default when unset.
func priority(j *api.Job) int {
	if j.Priority == nil {
		return api.JobDefaultPriority
	}
	return *j.Priority
}
