package engine

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestBestFit: an allocation goes to the node it fits most tightly (the
// fewest device instances left free in the group it takes), then to the
// smaller device group, then by node order, whatever the nodes are
// called: a 2-GPU job takes a 4-GPU node before an empty 8-GPU one, which
// stays whole for a gang (docs/simulator.md, round 34: first fit by node
// ID left heterogeneous fleets to the luck of the names).
func TestBestFit(t *testing.T) {
	type node struct {
		id         string
		gpus, used int
	}
	cases := map[string]struct {
		nodes []node
		gpus  int
		want  string
	}{
		"a 4-GPU node before an empty 8-GPU one": {
			nodes: []node{{"n1", 8, 0}, {"n2", 4, 0}}, gpus: 2, want: "n2",
		},
		"the same with the names the other way round": {
			nodes: []node{{"n1", 4, 0}, {"n2", 8, 0}}, gpus: 2, want: "n1",
		},
		"a hole in a partly used node before a whole smaller node": {
			nodes: []node{{"n1", 4, 0}, {"n2", 8, 5}}, gpus: 2, want: "n2",
		},
		"an exact fit before any other": {
			nodes: []node{{"n1", 8, 0}, {"n2", 8, 5}, {"n3", 8, 6}}, gpus: 2, want: "n3",
		},
		"equal fits: node order": {
			nodes: []node{{"n1", 8, 4}, {"n2", 8, 4}}, gpus: 2, want: "n1",
		},
		"a whole-node job: the one node it fits": {
			nodes: []node{{"n1", 4, 0}, {"n2", 8, 1}, {"n3", 8, 0}}, gpus: 8, want: "n3",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var nodes []*Node
			var allocs []*Alloc
			for _, n := range tc.nodes {
				nodes = append(nodes, gpuNode(n.id, n.gpus))
				if n.used > 0 {
					allocs = append(allocs, alloc("other", "busy-"+n.id, "g", n.id, 100, 128, map[string]int{h200: n.used}))
				}
			}
			job := mkJob("ml", "j").Pool("gpu").Device("gpu", tc.gpus).Build()
			p := Decide(testConfig(), snap([]*Tenant{mkTenant("ml").Build(), mkTenant("other").Build()}, nodes, allocs, job))
			d, ok := p.Decision("ml", "j")
			must.True(t, ok, must.Sprint(p.Verdicts["ml/j"].Reason))
			must.Eq(t, map[string][]string{"g": {tc.want}}, d.Nodes)
		})
	}
}
