package engine

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/shoenig/test/must"
)

// scanBestFit is bestFit's plain scan without an index or a cursor: the
// first node in list order that fits leaving nothing free, else the
// fewest instances left free, then the smaller group, then list order.
func scanBestFit(c *capacity, j *Job, g *Group, nodes []*freeNode) int {
	best, bestSlack, bestSize := -1, 0, 0
	for i, fn := range nodes {
		if !c.eligible(fn, j, g) {
			continue
		}
		slack, size, ok := c.slack(fn, g)
		if !ok {
			continue
		}
		if best < 0 || slack < bestSlack || slack == bestSlack && size < bestSize {
			best, bestSlack, bestSize = i, slack, size
		}
		if slack == 0 {
			break
		}
	}
	return best
}

// checkIndex fails unless every bucket of every index of c holds exactly
// the nodes with a device group of that free count.
func checkIndex(t *testing.T, c *capacity, msg string) {
	t.Helper()
	lists := map[*freeIndex][]*freeNode{c.allIndex: c.nodes}
	for pool, nodes := range c.byPool {
		lists[c.poolIndex[pool]] = nodes
	}
	for x, nodes := range lists {
		for k := 0; k < freeBuckets; k++ {
			for i, fn := range nodes {
				if in := x.bits[k][i/64]&(1<<(i%64)) != 0; in != fn.inBucket(k) {
					t.Fatalf("%s: node %s in bucket %d: index says %v, free counts %v", msg, fn.node.ID, k, in, fn.dev)
				}
			}
		}
	}
}

// randomFleet builds up to 300 nodes in two pools, each with one to three
// device groups of 1 to 24 instances (H200, A100, Ascend), some not
// ready, in two datacenters, partly used, some over-committed.
func randomFleet(r *rand.Rand) ([]*Node, []*Alloc) {
	kinds := []string{h200, "nvidia/gpu/A100", "huawei/npu/Ascend910B"}
	var nodes []*Node
	var allocs []*Alloc
	for i := 0; i < 1+r.Intn(300); i++ {
		id := fmt.Sprintf("n%03d", i)
		b := mkNode(id).Pool([]string{"gpu", "big"}[r.Intn(2)]).DC([]string{"dc1", "dc2"}[r.Intn(2)]).CPU(64000).Mem(1 << 20)
		if r.Intn(20) == 0 {
			b.NotReady()
		}
		used := map[string]int{}
		for _, k := range r.Perm(len(kinds))[:1+r.Intn(len(kinds))] {
			n := 1 + r.Intn(24)
			b.Devices(kinds[k], n)
			used[kinds[k]] = r.Intn(n + 2) // n+1: over-committed
		}
		nodes = append(nodes, b.Build())
		allocs = append(allocs, alloc("other", "busy-"+id, "g", id, int64(r.Intn(60000)), 1024, used))
	}
	return nodes, allocs
}

// TestPropertyBestFitIndexed: on random fleets, through random places,
// undos and frees, bestFit (reading single device requests from the free
// index) picks the node the plain scan picks, and the index always holds
// exactly the nodes' free counts.
func TestPropertyBestFitIndexed(t *testing.T) {
	names := []string{"gpu", "nvidia/gpu", "nvidia/gpu/A100", h200, "huawei/npu", "npu"}
	for seed := int64(0); seed < 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		nodes, allocs := randomFleet(r)
		c := newCapacity(nodes, allocs, newMatcher())
		checkIndex(t, c, fmt.Sprintf("seed %d: built", seed))
		var takes []take
		for step := 0; step < 60; step++ {
			jb := mkJob("ml", fmt.Sprintf("j%d", step)).Pool([]string{"gpu", "big", "all"}[r.Intn(3)]).
				CPU(int64(r.Intn(8000))).Mem(512).Device(names[r.Intn(len(names))], 1+r.Intn(20))
			if r.Intn(4) == 0 {
				jb.DCs("dc2")
			}
			j := jb.Build()
			g := &j.Groups[0]
			list, x := c.candidates(j), c.indexOf(j)
			msg := fmt.Sprintf("seed %d step %d: %s × %d in pool %s", seed, step, g.Devices[0].Name, g.Devices[0].Count, j.NodePool)
			want := scanBestFit(c, j, g, list)
			got := c.bestFit(j, g, groupKey(j, g), list, x, nil)
			if want != got {
				t.Fatalf("%s: indexed best fit %d, plain scan %d", msg, got, want)
			}
			switch op := r.Intn(5); {
			case got >= 0 && op < 3:
				tk, ok := c.place(list[got], g)
				must.True(t, ok, must.Sprint(msg))
				takes = append(takes, tk)
			case op == 3 && len(takes) > 0:
				k := r.Intn(len(takes))
				c.undo(takes[k : k+1])
				takes = append(takes[:k], takes[k+1:]...)
			default: // a victim's devices come free, as shift does
				fn := c.nodes[r.Intn(len(c.nodes))]
				fn.addDev(r.Intn(len(fn.dev)), 1+r.Intn(4))
			}
			checkIndex(t, c, msg)
		}
	}
}
