package sim

import (
	"math"
	"strconv"

	"github.com/allot-sh/allot/governor/engine"
)

// limit is how many feasible nodes Nomad's batch scheduler ranks per
// placement (scheduler/stack.go: "power of two choices").
const limit = 2

// evaluate is one Nomad evaluation of job j: it places the job's pending
// allocations one by one, each on the better-scoring of the first two
// feasible nodes in a random order. cands restricts the nodes searched
// (nil: all), and a group's pin restricts them further (pin.go). Under nomad-priority an allocation that fits nowhere may
// preempt lower-priority allocations.
func (s *sim) evaluate(j *jobRun, cands []int) {
	failed := map[int]bool{}
	rest := j.pending[:0:0]
	for _, gi := range j.pending {
		if failed[gi] || !s.placeOne(j, gi, candsFor(j, gi, cands)) {
			if !failed[gi] && s.policy == NomadPriority && s.mayPreempt(j) && s.preemptFor(j, gi) {
				continue
			}
			failed[gi] = true
			rest = append(rest, gi)
		}
	}
	j.pending = rest
	j.triedEpoch = len(s.freed)
	s.startIfComplete(j)
}

// placeOne places one allocation of group gi; false when no node fits.
func (s *sim) placeOne(j *jobRun, gi int, cands []int) bool {
	g := &j.w.Groups[gi]
	pool := j.w.Pool
	if pool == "" {
		pool = "default"
	}
	n := len(s.nodes)
	perm := s.perm[:0]
	if cands == nil {
		for i := 0; i < n; i++ {
			perm = append(perm, i)
		}
	} else {
		perm = append(perm, cands...)
	}
	var best *node
	bestDev, found := 0, 0
	bestScore := math.Inf(-1)
	// lazy Fisher-Yates: a random order, stopped after `limit` feasible.
	for i := 0; i < len(perm) && found < limit; i++ {
		k := i + s.rng.Intn(len(perm)-i)
		perm[i], perm[k] = perm[k], perm[i]
		nd := s.nodes[perm[i]]
		if nd.n.Pool != pool {
			continue
		}
		dev, ok := nd.fits(g, s.rng.Intn)
		if !ok {
			continue
		}
		found++
		if sc := binpack(nd, g.CPU, g.MemoryMB); sc > bestScore {
			best, bestDev, bestScore = nd, dev, sc
		}
	}
	if best == nil {
		return false
	}
	s.startAlloc(j, gi, best, bestDev)
	return true
}

// binpack is Nomad's ScoreFitBinPack for the node after the placement:
// 20 − (10^freeCPU% + 10^freeMem%), higher for fuller nodes.
func binpack(nd *node, cpu, mem int64) float64 {
	fc := float64(nd.freeCPU-cpu) / float64(nd.n.CPU)
	fm := float64(nd.freeMem-mem) / float64(nd.n.MemoryMB)
	return 20 - (math.Pow(10, fc) + math.Pow(10, fm))
}

func (s *sim) startAlloc(j *jobRun, gi int, nd *node, dev int) {
	g := &j.w.Groups[gi]
	a := &alloc{seq: len(s.live), job: j, group: gi, node: nd, dev: dev, gpus: g.GPUs, start: s.now}
	a.eng = &engine.Alloc{ID: j.w.ID + "/" + g.Name + "/" + nd.n.ID, Namespace: j.w.Tenant, JobID: j.w.ID,
		Group: g.Name, NodeID: nd.n.ID, Live: true, CPU: g.CPU, MemoryMB: g.MemoryMB}
	if s.opts.StopDelay > 0 && j.requeues > 0 {
		// an earlier run's allocation may still stop on this node
		a.eng.ID += "/" + strconv.Itoa(j.requeues)
	}
	if dev >= 0 {
		a.eng.Devices = map[string]int{nd.n.Devices[dev].ID(): g.GPUs}
	}
	nd.take(a, g)
	a.livePos = len(s.live)
	s.live = append(s.live, a)
	j.allocs = append(j.allocs, a)
	s.m.allocatedAt(s.now, j.w.Tenant, g.GPUs)
}

// stopAlloc ends an allocation and frees its capacity.
func (s *sim) stopAlloc(a *alloc) {
	s.unlink(a)
	s.free(a)
}

// beginStop ends an allocation of a requeued job whose capacity Nomad
// counts until StopDelay has passed (release).
func (s *sim) beginStop(a *alloc) {
	s.unlink(a)
	a.eng.Live, a.eng.Stopping = false, true
	a.livePos, a.until = len(s.stopping), s.now+s.opts.StopDelay
	s.stopping = append(s.stopping, a)
	s.push(event{t: a.until, kind: evRelease, alloc: a})
}

// release frees a stopping allocation's capacity; the governor sees the
// change (its event stream) and cycles.
func (s *sim) release(a *alloc) {
	last := s.stopping[len(s.stopping)-1]
	s.stopping[a.livePos], last.livePos = last, a.livePos
	s.stopping = s.stopping[:len(s.stopping)-1]
	s.free(a)
	s.dirty = true
}

// free gives an allocation's capacity back to its node.
func (s *sim) free(a *alloc) {
	a.node.release(a, &a.job.w.Groups[a.group])
	s.freed = append(s.freed, a.node.idx)
	s.m.allocatedAt(s.now, a.job.w.Tenant, -a.gpus)
}

// unlink removes an allocation from the live ones and its job's.
func (s *sim) unlink(a *alloc) {
	j := a.job
	last := s.live[len(s.live)-1]
	s.live[a.livePos], last.livePos = last, a.livePos
	s.live = s.live[:len(s.live)-1]
	for i, b := range j.allocs {
		if b == a {
			j.allocs = append(j.allocs[:i], j.allocs[i+1:]...)
			break
		}
	}
}

func (s *sim) mayPreempt(j *jobRun) bool {
	if j.lastPreemptTry >= 0 && j.lastPreemptTry != s.now && s.now-j.lastPreemptTry < s.opts.PreemptRetry {
		return false
	}
	j.lastPreemptTry = s.now
	return true
}
