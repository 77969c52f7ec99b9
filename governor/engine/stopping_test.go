package engine

import (
	"testing"

	"github.com/shoenig/test/must"
)

// stopping builds an allocation Nomad is stopping (desired stop, client
// not terminal yet).
func stopping(a *Alloc) *Alloc {
	a.Live, a.Stopping = false, true
	return a
}

// Nomad 1.6.1 frees an allocation's resources only when its client
// reports it terminal; until then a stopping allocation holds its node's
// devices (the phantom free-capacity defect, issue 15), but it is no
// longer placed for its job nor part of its tenant's usage.
func TestStoppingAllocationHoldsCapacity(t *testing.T) {
	cases := map[string]struct {
		allocs []*Alloc
		jobs   []*Job
		admit  []string
		reason map[string]string // "ns/id" → substring of its verdict reason
		usage  int64             // team-b's GPU usage in the plan
	}{
		"a stopping allocation's GPUs are not free": {
			allocs: []*Alloc{stopping(alloc("team-b", "old", "g", "n1", 100, 128, map[string]int{h200: 4}))},
			jobs:   []*Job{mkJob("team-a", "claim").Pool("gpu").Device("gpu", 4).Build()},
			reason: map[string]string{"team-a/claim": "fit:"},
		},
		"control: once gone, they are": {
			jobs:  []*Job{mkJob("team-a", "claim").Pool("gpu").Device("gpu", 4).Build()},
			admit: []string{"claim"},
		},
		"a stopping allocation is not placed for its admitted job": {
			allocs: []*Alloc{stopping(alloc("team-b", "run", "g", "n1", 100, 128, map[string]int{h200: 4}))},
			jobs: []*Job{mkJob("team-b", "run").Pool("gpu").Device("gpu", 4).State(Admitted).Build(),
				mkJob("team-a", "claim").Pool("gpu").Device("gpu", 4).Build()},
			reason: map[string]string{"team-b/run": "waiting for Nomad to place 1 of 1 allocations", "team-a/claim": "fit:"},
			usage:  4, // the admitted job's reservation, not its stopping allocation
		},
		"a held job's live allocation is stopping, not placed: it is not admitted again onto it": {
			allocs: []*Alloc{alloc("team-b", "victim", "g", "n1", 100, 128, map[string]int{h200: 4})},
			jobs:   []*Job{mkJob("team-b", "victim").Pool("gpu").Device("gpu", 4).Build()},
			reason: map[string]string{"team-b/victim": "fit:"},
			usage:  4, // still live: counted until Nomad marks it to stop
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			quota := func(ns string) *Tenant { return mkTenant(ns).Quota("gpu", 4).Limit("gpu", 8).Build() }
			p := Decide(testConfig(), snap([]*Tenant{quota("team-a"), quota("team-b")}, []*Node{gpuNode("n1", 4)}, tc.allocs, tc.jobs...))
			admit, _ := summarize(p)
			must.Eq(t, tc.admit, admit)
			for key, want := range tc.reason {
				must.StrContains(t, p.Verdicts[key].Reason, want)
			}
			for _, ts := range p.Tenants {
				if ts.Namespace == "team-b" {
					must.Eq(t, tc.usage, ts.Usage["gpu"])
				}
			}
		})
	}
}

func TestStoppingAllocationEndsNowInAReservation(t *testing.T) {
	cfg := testConfig()
	cfg.StarvationTimeout = 0
	big := mkJob("team-a", "big").Pool("gpu").Device("gpu", 4).Build()
	allocs := []*Alloc{stopping(alloc("team-b", "old", "g", "n1", 100, 128, map[string]int{h200: 4}))}
	p := Decide(cfg, snap([]*Tenant{mkTenant("team-a").Quota("gpu", 4).Build(), mkTenant("team-b").Build()},
		[]*Node{gpuNode("n1", 4)}, allocs, big))
	must.SliceLen(t, 1, p.Reservations)
	must.Eq(t, p.Now, p.Reservations[0].Start, must.Sprint("the head starts once the stopping allocation is gone"))
}
