package engine

import (
	"fmt"
	"math/rand"
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

// TestPropertyBestFit: on random nodes of 4 or 8 GPUs, partly used, one
// job's pin is the node a plain scan picks: the first exact fit, else
// the fewest GPUs left free, then the smaller node, then node order
// (what bestFit's free index leaves unread never beats it).
func TestPropertyBestFit(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		var nodes []*Node
		var allocs []*Alloc
		type free struct{ left, size int }
		frees := map[string]free{}
		need := 1 + r.Intn(8)
		want, best := "", free{}
		for i := 0; i < 1+r.Intn(12); i++ {
			id, size := fmt.Sprintf("n%02d", i), 4+4*r.Intn(2)
			used := r.Intn(size + 1)
			nodes = append(nodes, gpuNode(id, size))
			if used > 0 {
				allocs = append(allocs, alloc("other", "busy-"+id, "g", id, 100, 128, map[string]int{h200: used}))
			}
			f := free{size - used - need, size}
			frees[id] = f
			exact := want != "" && best.left == 0 // the first exact fit ends the search
			if f.left >= 0 && !exact && (want == "" || f.left < best.left || f.left == best.left && f.size < best.size) {
				want, best = id, f
			}
		}
		job := mkJob("ml", "j").Pool("gpu").Device("gpu", need).Build()
		p := Decide(testConfig(), snap([]*Tenant{mkTenant("ml").Build(), mkTenant("other").Build()}, nodes, allocs, job))
		d, ok := p.Decision("ml", "j")
		if want == "" {
			must.False(t, ok && d.Action == Admit, must.Sprintf("seed %d: no node has %d GPUs free", seed, need))
			continue
		}
		must.True(t, ok, must.Sprintf("seed %d: %s", seed, p.Verdicts["ml/j"].Reason))
		must.Eq(t, map[string][]string{"g": {want}}, d.Nodes, must.Sprintf("seed %d: need %d, nodes %v", seed, need, frees))
	}
}
