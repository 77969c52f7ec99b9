package sim

import (
	"sort"

	"github.com/allot-sh/allot/governor/sim/workload"
)

// priorityGap is the least priority difference Nomad preempts across.
const priorityGap = 10

// preemptFor is Nomad's native preemption for one allocation of group gi
// of job j: on a node, evict allocations of jobs at least priorityGap
// below j, lowest priority first, until the allocation fits. Of the first
// `limit` nodes (random order) where that works, the one whose victims
// have the least total priority wins. Victims lose the work since their
// last checkpoint and are rescheduled (blocked) like any preempted Nomad
// allocation.
func (s *sim) preemptFor(j *jobRun, gi int) bool {
	g := &j.w.Groups[gi]
	pool := j.w.Pool
	if pool == "" {
		pool = "default"
	}
	var best []*alloc
	var bestNode *node
	bestCost, found := 0, 0
	order := s.rng.Perm(len(s.nodes))
	for _, i := range order {
		if found >= limit {
			break
		}
		nd := s.nodes[i]
		if nd.n.Pool != pool || !nd.n.Ready {
			continue
		}
		victims, ok := s.victimsOn(nd, j, g)
		if !ok {
			continue
		}
		found++
		cost := 0
		for _, v := range victims {
			cost += v.job.priority
		}
		if bestNode == nil || cost < bestCost || (cost == bestCost && len(victims) < len(best)) {
			best, bestNode, bestCost = victims, nd, cost
		}
	}
	if bestNode == nil {
		return false
	}
	seen := map[*jobRun]bool{}
	for _, v := range best {
		if !seen[v.job] {
			seen[v.job] = true
			s.m.preemption(v.job)
		}
		s.evict(v)
	}
	dev, ok := bestNode.fits(g, s.rng.Intn)
	if !ok {
		return false
	}
	s.startAlloc(j, gi, bestNode, dev)
	return true
}

// victimsOn picks the allocations of nd to evict so that one allocation
// of g fits, or ok false.
func (s *sim) victimsOn(nd *node, j *jobRun, g *workload.Group) ([]*alloc, bool) {
	var cands []*alloc
	for _, a := range nd.allocs {
		if a.job != j && a.job.priority+priorityGap <= j.priority {
			cands = append(cands, a)
		}
	}
	if len(cands) == 0 {
		return nil, false
	}
	sort.SliceStable(cands, func(x, y int) bool {
		if cands[x].job.priority != cands[y].job.priority {
			return cands[x].job.priority < cands[y].job.priority
		}
		return cands[x].start > cands[y].start
	})
	cpu, mem := nd.freeCPU, nd.freeMem
	free := append([]int(nil), nd.free...)
	fits := func() bool {
		if cpu < g.CPU || mem < g.MemoryMB {
			return false
		}
		if g.GPUs == 0 {
			return true
		}
		for i := range nd.n.Devices {
			if free[i] >= g.GPUs && groupMatches(&nd.n.Devices[i], g.Device) {
				return true
			}
		}
		return false
	}
	var victims []*alloc
	for _, a := range cands {
		if fits() {
			break
		}
		vg := &a.job.w.Groups[a.group]
		cpu, mem = cpu+vg.CPU, mem+vg.MemoryMB
		if a.dev >= 0 {
			free[a.dev] += a.gpus
		}
		victims = append(victims, a)
	}
	return victims, fits() && len(victims) > 0
}

// evict preempts one allocation: its job's work stops (back to the last
// checkpoint) and Nomad reschedules the allocation.
func (s *sim) evict(a *alloc) {
	j := a.job
	s.interrupt(j)
	s.stopAlloc(a)
	j.pending = append(j.pending, a.group)
	s.block(j)
}
