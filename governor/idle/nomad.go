package idle

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Stat names as the device plugin (and nomad-device-nvidia) report them.
const (
	statUtilization = "GPU utilization"
	statMemory      = "Memory utilization"
	statProcesses   = "Processes"
)

// Source is the part of Nomad the detector reads: the allocations with
// their allocated devices, and the device stats Nomad's clients collect
// from the device plugin (GET /v1/client/allocation/:id/stats and
// GET /v1/client/stats?node_id=).
type Source interface {
	Allocations(ctx context.Context) ([]*api.AllocationListStub, error)
	AllocDeviceStats(ctx context.Context, allocID string) ([]*api.DeviceGroupStats, error)
	NodeDeviceStats(ctx context.Context, nodeID string) ([]*api.DeviceGroupStats, error)
	DeviceNodes(ctx context.Context) ([]string, error)
	Jobs(ctx context.Context) ([]*api.JobListStub, error)
}

// NomadSource implements Source with the governor's Nomad client.
type NomadSource struct{ Client *api.Client }

// Allocations lists every allocation with its allocated resources.
func (n NomadSource) Allocations(ctx context.Context) ([]*api.AllocationListStub, error) {
	q := (&api.QueryOptions{Namespace: "*", Params: map[string]string{"resources": "true"}}).WithContext(ctx)
	out, _, err := n.Client.Allocations().List(q)
	if err != nil {
		return nil, fmt.Errorf("listing allocations: %w", err)
	}
	return out, nil
}

// AllocDeviceStats reads one allocation's device stats.
func (n NomadSource) AllocDeviceStats(ctx context.Context, allocID string) ([]*api.DeviceGroupStats, error) {
	st, err := n.Client.Allocations().Stats(&api.Allocation{ID: allocID}, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("reading stats of allocation %s: %w", allocID, err)
	}
	if st == nil || st.ResourceUsage == nil {
		return nil, nil
	}
	return st.ResourceUsage.DeviceStats, nil
}

// NodeDeviceStats reads every device's stats on one node.
func (n NomadSource) NodeDeviceStats(ctx context.Context, nodeID string) ([]*api.DeviceGroupStats, error) {
	st, err := n.Client.Nodes().Stats(nodeID, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("reading stats of node %s: %w", nodeID, err)
	}
	if st == nil {
		return nil, nil
	}
	return st.DeviceStats, nil
}

// DeviceNodes lists the ready nodes that have devices.
func (n NomadSource) DeviceNodes(ctx context.Context) ([]string, error) {
	q := (&api.QueryOptions{Params: map[string]string{"resources": "true"}}).WithContext(ctx)
	nodes, _, err := n.Client.Nodes().List(q)
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var out []string
	for _, nd := range nodes {
		if nd != nil && nd.Status == api.NodeStatusReady && nd.NodeResources != nil && len(nd.NodeResources.Devices) > 0 {
			out = append(out, nd.ID)
		}
	}
	return out, nil
}

// Jobs lists every job (type and the submit time of its current version,
// for the unclaimed class).
func (n NomadSource) Jobs(ctx context.Context) ([]*api.JobListStub, error) {
	out, _, err := n.Client.Jobs().List((&api.QueryOptions{Namespace: "*"}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	return out, nil
}

// Namespaces lists the namespaces with their meta.
func (n NomadSource) Namespaces(ctx context.Context) ([]*api.Namespace, error) {
	out, _, err := n.Client.Namespaces().List((&api.QueryOptions{}).WithContext(ctx))
	return out, err
}

// held is a live allocation and the device instances it holds.
type held struct {
	alloc   *api.AllocationListStub
	devices []string
}

// live is whether an allocation still holds its devices: not terminal on
// the client (a stopping allocation holds them until its tasks exit).
func live(a *api.AllocationListStub) bool {
	return a.ClientStatus == api.AllocClientStatusPending || a.ClientStatus == api.AllocClientStatusRunning
}

// holders lists the live allocations with devices.
func holders(allocs []*api.AllocationListStub) []held {
	var out []held
	for _, a := range allocs {
		if a == nil || !live(a) || a.AllocatedResources == nil {
			continue
		}
		var ids []string
		for _, tr := range a.AllocatedResources.Tasks {
			for _, d := range tr.Devices {
				if d != nil {
					ids = append(ids, d.DeviceIDs...)
				}
			}
		}
		if len(ids) > 0 {
			out = append(out, held{alloc: a, devices: ids})
		}
	}
	return out
}

// instance is one device's reading.
type instance struct {
	util      float64
	memMiB    int64
	processes int
	hasUtil   bool
}

// instances indexes device stats by device ID.
func instances(groups []*api.DeviceGroupStats) map[string]instance {
	out := map[string]instance{}
	for _, g := range groups {
		if g == nil {
			continue
		}
		for id, st := range g.InstanceStats {
			if st == nil {
				continue
			}
			out[id] = readInstance(st)
		}
	}
	return out
}

func readInstance(st *api.DeviceStats) instance {
	var in instance
	mem := st.Summary
	if st.Stats != nil {
		if v := st.Stats.Attributes[statUtilization]; v != nil && v.FloatNumeratorVal != nil {
			in.util, in.hasUtil = *v.FloatNumeratorVal, true
		}
		if v := st.Stats.Attributes[statMemory]; v != nil {
			mem = v
		}
		if v := st.Stats.Attributes[statProcesses]; v != nil && v.IntNumeratorVal != nil {
			in.processes = int(*v.IntNumeratorVal)
		}
	}
	if mem != nil && mem.IntNumeratorVal != nil {
		in.memMiB = *mem.IntNumeratorVal
	}
	return in
}

// sample folds an allocation's devices into one sample: known only when
// every device it holds reported utilization; the highest utilization,
// the summed memory and processes.
func sample(at time.Time, devices []string, stats map[string]instance) Sample {
	s := Sample{At: at, Known: len(devices) > 0}
	for _, id := range devices {
		in, ok := stats[id]
		if !ok || !in.hasUtil {
			return Sample{At: at}
		}
		if in.util > s.UtilPct {
			s.UtilPct = in.util
		}
		s.MemoryMiB += in.memMiB
		s.Processes += in.processes
	}
	return s
}
