package sim

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

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
