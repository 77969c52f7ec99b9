package server

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
)

// h200Node is a node of pool with n H200s, the first unhealthy ones
// unhealthy.
func h200Node(id, pool string, n, unhealthy int, status string, eligible bool) *api.Node {
	var inst []*api.NodeDevice
	for i := 0; i < n; i++ {
		inst = append(inst, &api.NodeDevice{ID: id + "-gpu" + string(rune('0'+i)), Healthy: i >= unhealthy})
	}
	el := api.NodeSchedulingEligible
	if !eligible {
		el = api.NodeSchedulingIneligible
	}
	return &api.Node{ID: id, Name: id, NodePool: pool, Status: status, SchedulingEligibility: el,
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 8000}, Memory: api.NodeMemoryResources{MemoryMB: 65536},
			Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H200", Instances: inst}}}}
}

// gpuAlloc is a running (or stopping) allocation of ns/job holding n
// H200s on node.
func gpuAlloc(id, ns, job, node string, n int, desired, client string) *api.Allocation {
	name := "nvidia/gpu/H200"
	var ids []string
	for i := 0; i < n; i++ {
		ids = append(ids, id+string(rune('0'+i)))
	}
	return &api.Allocation{ID: id, Namespace: ns, JobID: job, TaskGroup: "g", NodeID: node,
		DesiredStatus: desired, ClientStatus: client,
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": {
			Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H200", DeviceIDs: ids}}}}},
		Job: &api.Job{ID: &job, Namespace: &ns, Name: &name}}
}

func TestPoolsAreTheLiveSnapshot(t *testing.T) {
	// gpu: n1 (4 H200s, 1 unhealthy) runs 1 of ml and 1 stopping of
	// secret (it holds its device until its client reports it terminal),
	// a finished one holds nothing; n2 (4) is draining with 1 of secret
	// still running (allocated, not down). lab: n3 (2) is down.
	n2 := h200Node("n2", "gpu", 4, 0, api.NodeStatusReady, true)
	n2.Drain = true
	in := &cluster.Initial{Nodes: []*api.Node{h200Node("n1", "gpu", 4, 1, api.NodeStatusReady, true), n2,
		h200Node("n3", "lab", 2, 0, api.NodeStatusDown, true)},
		Allocs: []*api.Allocation{gpuAlloc("a1", "ml", "train", "n1", 1, "run", "running"),
			gpuAlloc("a2", "secret", "x", "n1", 1, "stop", "running"),
			gpuAlloc("a3", "secret", "y", "n2", 1, "run", "running"),
			gpuAlloc("a4", "secret", "old", "n1", 1, "run", "complete")}}
	s, srv := testServer(t, samplePlan(), true, nil)
	s.Store.Reset(in)
	s.Now = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }

	want := []allotapi.Pool{
		{Pool: "gpu", Model: "nvidia/gpu/H200", Capacity: 8, Allocated: 3, Idle: 1, Down: 4},
		{Pool: "lab", Model: "nvidia/gpu/H200", Capacity: 2, Down: 2},
	}
	// The same per-pool totals for a tenant, a management token and a
	// cluster without ACLs: capacity is not tenant data.
	for _, token := range []string{"ml", "root", "off"} {
		c := &allotapi.Client{Address: srv.URL, Token: token}
		got, err := c.Pools(context.Background())
		must.NoError(t, err)
		must.Eq(t, want, got.Pools, must.Sprint(token))
		must.Eq(t, s.Now(), got.At)
	}
	// No namespace readable: 403, like every /allot/v1 read.
	_, err := (&allotapi.Client{Address: srv.URL, Token: ""}).Pools(context.Background())
	must.ErrorContains(t, err, "403")
}

func TestPoolsBeforeTheFirstCycle(t *testing.T) {
	c := newServer(t, nil, true)
	_, err := c.Pools(context.Background())
	must.ErrorContains(t, err, "503")
}

func TestPoolsReservedForStarvingHeads(t *testing.T) {
	nodes := []*engine.Node{
		{ID: "n1", Pool: "gpu", Ready: true, Devices: []engine.DeviceGroup{{Vendor: "nvidia", Type: "gpu", Model: "H200", Healthy: 8, Instances: 8}}},
		{ID: "n2", Pool: "gpu", Ready: true, Devices: []engine.DeviceGroup{{Vendor: "nvidia", Type: "gpu", Model: "L4", Healthy: 2, Instances: 2}}},
	}
	jobs := map[string]*engine.Job{
		// 2 × 3 H200s by model; 1 × 2 "nvidia/gpu" on n1, whose one model is H200.
		"ml/big": {Namespace: "ml", ID: "big", Groups: []engine.Group{
			{Name: "a", Count: 2, Devices: []engine.DeviceRequest{{Name: "nvidia/gpu/H200", Count: 3}}},
			{Name: "b", Count: 1, Devices: []engine.DeviceRequest{{Name: "nvidia/gpu", Count: 2}}}}},
		// "gpu" over n1 and n2 matches two models: attributed to none.
		"ml/any": {Namespace: "ml", ID: "any", Groups: []engine.Group{{Name: "a", Count: 1, Devices: []engine.DeviceRequest{{Name: "gpu", Count: 1}}}}},
	}
	lookup := func(ns, id string) (*engine.Job, bool) { j, ok := jobs[ns+"/"+id]; return j, ok }
	res := []engine.Reservation{{Job: "ml/big", Pool: "gpu", Nodes: []string{"n1"}},
		{Job: "ml/any", Pool: "gpu", Nodes: []string{"n1", "n2"}}, {Job: "ml/gone", Pool: "gpu", Nodes: []string{"n1"}}}
	allocs := []*engine.Alloc{{ID: "a", NodeID: "n1", Live: true, Devices: map[string]int{"nvidia/gpu/H200": 6}}}
	got := PoolsOf(nodes, allocs, res, lookup)
	must.Eq(t, []allotapi.Pool{
		{Pool: "gpu", Model: "nvidia/gpu/H200", Capacity: 8, Allocated: 6, Idle: 2, Reserved: 8},
		{Pool: "gpu", Model: "nvidia/gpu/L4", Capacity: 2, Idle: 2},
	}, got)
}
