//go:build linux && cgo

package nvml

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// classifyTopology sets each GPU's topology class, NVLink count and island
// from its active NVLinks:
//
//   - a link whose far end is not another GPU goes to an NVSwitch: the GPU
//     is "nvswitch", and every switch-attached GPU shares one island;
//   - a link to another GPU's bus id is a direct NVLink (bridge or mesh):
//     "nvlink", and linked GPUs share an island;
//   - no active link: "pcie", an island of its own.
func classifyTopology(gpus []*gpu) {
	byBus := map[string]int{}
	for i, g := range gpus {
		if g.bus != "" {
			byBus[g.bus] = i
		}
	}
	uf := newUnionFind(len(gpus))
	fabric := -1 // first switch-attached GPU
	for i, g := range gpus {
		switched, peered := false, false
		for _, r := range g.remotes {
			if j, ok := byBus[r]; ok && j != i {
				peered = true
				uf.union(i, j)
				continue
			}
			switched = true
		}
		g.dev.NVLinkLinks = len(g.remotes)
		switch {
		case switched:
			g.dev.Topology = accel.TopologyNVSwitch
			if fabric < 0 {
				fabric = i
			}
			uf.union(i, fabric)
		case peered:
			g.dev.Topology = accel.TopologyNVLink
		default:
			g.dev.Topology = accel.TopologyPCIe
		}
	}
	numbers := map[int]int{}
	for i, g := range gpus {
		root := uf.find(i)
		if _, ok := numbers[root]; !ok {
			numbers[root] = len(numbers)
		}
		g.dev.Island = numbers[root]
	}
}

// fillNUMAFromAncestors derives NUMA nodes when NVML reports none for any
// GPU: two GPUs whose closest common PCIe ancestor is below the system
// level (TOPOLOGY_SYSTEM: the path crosses the CPU interconnect) hang off
// the same CPU socket.
func fillNUMAFromAncestors(gpus []*gpu) {
	for _, g := range gpus {
		if g.dev.NUMANode >= 0 {
			return
		}
	}
	next := 0
	for i, g := range gpus {
		if g.dev.NUMANode >= 0 {
			continue
		}
		g.dev.NUMANode = next
		for _, o := range gpus[i+1:] {
			if o.dev.NUMANode >= 0 {
				continue
			}
			level, ret := g.h.GetTopologyCommonAncestor(o.h)
			if ret != nvml.SUCCESS {
				// Unknown: leave NUMA unknown rather than guess.
				resetNUMA(gpus)
				return
			}
			if level < nvml.TOPOLOGY_SYSTEM {
				o.dev.NUMANode = next
			}
		}
		next++
	}
}

func resetNUMA(gpus []*gpu) {
	for _, g := range gpus {
		g.dev.NUMANode = -1
	}
}

type unionFind []int

func newUnionFind(n int) unionFind {
	u := make(unionFind, n)
	for i := range u {
		u[i] = i
	}
	return u
}

func (u unionFind) find(i int) int {
	for u[i] != i {
		u[i] = u[u[i]]
		i = u[i]
	}
	return i
}

func (u unionFind) union(a, b int) {
	ra, rb := u.find(a), u.find(b)
	if ra < rb {
		u[rb] = ra
	} else {
		u[ra] = rb
	}
}
