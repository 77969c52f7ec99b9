package sim

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/sim/fleet"
	"github.com/allot-sh/allot/governor/sim/workload"
)

// TestAllotPlacesOnlyOnPins: under allot every live allocation of a
// pinned job runs on a node its group is pinned to, and admissions are
// pinned (the check is not vacuous).
func TestAllotPlacesOnlyOnPins(t *testing.T) {
	checked := 0
	r := run(t, smallScenario(t, 3), Allot, func(s *sim) {
		for _, a := range s.live {
			j := a.job
			if j.pin == nil || j.pin[a.group] == nil {
				continue
			}
			checked++
			found := false
			for _, i := range j.pin[a.group] {
				found = found || i == a.node.idx
			}
			if !found {
				t.Fatalf("t=%v job %s: allocation on node %s, pinned to %v", s.now, j.key(), a.node.n.ID, j.pin[a.group])
			}
		}
	})
	must.Positive(t, r.Pins)
	must.Positive(t, checked)
	for _, p := range []Policy{NomadFIFO, NomadPriority} {
		must.Zero(t, run(t, smallScenario(t, 3), p, nil).Pins, must.Sprint(p, " places without pins"))
	}
}

// TestAllotUnpinsABlockedPinnedJob: a job pinned to a node another job
// filled is blocked in Nomad; the next cycle's Unpin removes the pin and
// Nomad places it on another node, still admitted.
func TestAllotUnpinsABlockedPinnedJob(t *testing.T) {
	spec, err := fleet.Load("testdata/small.hcl")
	must.NoError(t, err)
	mk := func(id, tenant string) *workload.Job {
		return &workload.Job{ID: id, Tenant: tenant, Duration: time.Hour, Gang: true,
			Groups: []workload.Group{{Name: "train", Count: 1, GPUs: 8, Device: workload.DefaultDevice, CPU: 1000, MemoryMB: 1024}}}
	}
	s, err := newSim(spec, []*workload.Job{mk("first", "a"), mk("second", "b")}, Allot, DefaultOptions())
	must.NoError(t, err)
	s.submitted = 2
	first, second := s.jobs[0], s.jobs[1]
	pin := map[string][]string{"train": {s.nodes[0].n.ID}}
	for _, j := range []*jobRun{first, second} {
		s.setPin(j, pin)
		j.admitted = true
		s.toNomad(j)
	}
	must.Eq(t, 0, first.allocs[0].node.idx)
	must.Eq(t, []int{0}, second.pending, must.Sprint("pinned to a full node: blocked"))

	s.cycle()
	must.Eq(t, 1, s.m.unpins)
	must.Nil(t, second.pin)
	must.True(t, second.admitted)
	must.SliceEmpty(t, second.pending)
	must.NotEq(t, 0, second.allocs[0].node.idx)
	must.Eq(t, [][]int{{0}}, first.pin, must.Sprint("the placed job keeps its pin"))
}

// TestPinConstraintAsTheGovernorWritesIt: the engine job of a pinned
// admission carries, in each pinned group, exactly the constraint
// governor/jobmeta writes (and governor/cluster converts back); a group
// without a pin and a job after its requeue or unpin carry none.
func TestPinConstraintAsTheGovernorWritesIt(t *testing.T) {
	spec, err := fleet.Load("testdata/small.hcl")
	must.NoError(t, err)
	job := &workload.Job{ID: "two", Tenant: "a", Duration: time.Hour, Groups: []workload.Group{
		{Name: "train", Count: 2, GPUs: 1, Device: workload.DefaultDevice, CPU: 1000, MemoryMB: 1024},
		{Name: "eval", Count: 1, GPUs: 1, Device: workload.DefaultDevice, CPU: 1000, MemoryMB: 1024}}}
	s, err := newSim(spec, []*workload.Job{job}, Allot, DefaultOptions())
	must.NoError(t, err)
	s.submitted = 1
	j := s.jobs[0]
	// Unsorted, repeated and unknown IDs, as the engine never sends them:
	// the constraint names the known nodes once, sorted.
	// A group left without known IDs is not pinned, as jobmeta.NewPin.
	nodes := map[string][]string{"train": {s.nodes[3].n.ID, s.nodes[1].n.ID, s.nodes[3].n.ID, "no-such-node"},
		"eval": {"no-such-node"}}
	want := jobmeta.NewPin(map[string][]string{"train": {s.nodes[3].n.ID, s.nodes[1].n.ID}})

	for name, clear := range map[string]func(){
		"requeue": func() { s.requeue(j) },
		"unpin":   func() { s.unpin(j) },
	} {
		t.Run(name, func(t *testing.T) {
			s.setPin(j, nodes)
			j.admitted, j.held = true, false
			ej := s.engineJob(j)
			must.True(t, ej.Pinned)
			must.Eq(t, []engine.Constraint{{LTarget: jobmeta.PinTarget, Operand: jobmeta.PinOperand, RTarget: want["train"]}},
				ej.Groups[0].Constraints)
			must.SliceEmpty(t, ej.Groups[1].Constraints, must.Sprint("group without a pin"))
			must.Nil(t, j.pin[1], must.Sprint("group without a pin places anywhere"))

			clear()
			ej = s.engineJob(j)
			must.False(t, ej.Pinned)
			for _, g := range ej.Groups {
				must.SliceEmpty(t, g.Constraints, must.Sprint(g.Name, " after ", name))
			}
		})
	}
}

// TestAllotReservesABlockedPinnedJobOnItsPin: the engine reserves a
// pinned job's unplaced allocations only on its pinned nodes, as on the
// real stack, where the job is read back with its pin constraint: a
// job pinned to a full node reserves nothing elsewhere, so a queued
// 8-GPU gang gets the first free node (without the constraint the
// blocked job's reservation took it, and the gang the next one).
func TestAllotReservesABlockedPinnedJobOnItsPin(t *testing.T) {
	spec, err := fleet.Load("testdata/small.hcl")
	must.NoError(t, err)
	mk := func(id, tenant string) *workload.Job {
		return &workload.Job{ID: id, Tenant: tenant, Duration: time.Hour, Gang: true,
			Groups: []workload.Group{{Name: "train", Count: 1, GPUs: 8, Device: workload.DefaultDevice, CPU: 1000, MemoryMB: 1024}}}
	}
	s, err := newSim(spec, []*workload.Job{mk("first", "a"), mk("second", "b"), mk("third", "c")}, Allot, DefaultOptions())
	must.NoError(t, err)
	s.submitted = 3
	first, second, third := s.jobs[0], s.jobs[1], s.jobs[2]
	pin := map[string][]string{"train": {s.nodes[0].n.ID}}
	for _, j := range []*jobRun{first, second} {
		s.setPin(j, pin)
		j.admitted = true
		s.toNomad(j)
	}
	must.Eq(t, []int{0}, second.pending, must.Sprint("pinned to a full node: blocked"))
	third.held = true
	s.held = append(s.held, third)

	free := ""
	for _, nd := range s.nodes[1:] {
		if free == "" || nd.n.ID < free {
			free = nd.n.ID
		}
	}
	plan := engine.Decide(s.opts.Engine, s.snapshot())
	var admitted, unpinned bool
	for _, d := range plan.Decisions {
		switch {
		case d.JobID == "third" && d.Action == engine.Admit:
			admitted = true
			must.Eq(t, map[string][]string{"train": {free}}, d.Nodes)
		case d.JobID == "second" && d.Action == engine.Unpin:
			unpinned = true
		}
	}
	must.True(t, admitted, must.Sprint(plan.Decisions))
	must.True(t, unpinned, must.Sprint(plan.Decisions))
}
