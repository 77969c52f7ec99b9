package sim

import (
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/sim/workload"
)

// node is a client node and its free capacity.
type node struct {
	n       *engine.Node
	idx     int
	freeCPU int64
	freeMem int64
	// free counts the unallocated healthy instances per device group.
	free   []int
	allocs []*alloc
}

// alloc is one placed allocation.
type alloc struct {
	seq   int
	job   *jobRun
	group int
	node  *node
	// dev is the device group index on the node, -1 without devices.
	dev   int
	gpus  int
	start time.Duration
	// until is when a stopping allocation frees its capacity.
	until time.Duration
	eng   *engine.Alloc
	// nodePos and livePos are the alloc's indexes in its node's and the
	// simulation's live (or, stopping, stopping) slices (swap-remove
	// keeps runs deterministic).
	nodePos, livePos int
}

// jobRun is a job's life in the simulation.
type jobRun struct {
	w        *workload.Job
	idx      int
	priority int
	// pending holds the group index of every allocation still to place.
	pending []int
	allocs  []*alloc
	// held: allot holds the job in its queue (not yet given to Nomad).
	held     bool
	admitted bool
	done     bool
	queuedAt time.Duration
	// progress is the work done before runningSince; running is true while
	// every allocation runs.
	progress     time.Duration
	running      bool
	runningSince time.Duration
	finishSeq    int
	// startSeq numbers the job's scheduled starts (StartDelay): only the
	// latest counts.
	startSeq   int
	firstStart time.Duration
	end        time.Duration
	requeues   int
	preempted  int
	admittedAt time.Duration
	requeuedAt time.Duration
	// preemptedBy lists the job's preemptors, most recent last, as
	// allot.preempted-by keeps them (notePreemptor).
	preemptedBy []string
	// eng is the job as the engine sees it, built once and updated.
	eng        *engine.Job
	lostGPUSec float64
	// triedEpoch is the placement epoch of the job's last full attempt.
	triedEpoch int
	// lastPreemptTry rate-limits nomad-priority preemption attempts.
	lastPreemptTry time.Duration
	ended          int
	// blocked is the first failing check of the held job's latest
	// verdict (nil when it passed or has none yet); blockedBy names it.
	blocked *engine.Check
	// pin holds, per group, the sorted indices of the nodes the engine
	// pinned the admitted job to (nil: not pinned; a nil group places
	// anywhere), pin.go.
	pin [][]int
	// pinCons holds, per group, the constraint the governor writes for
	// the group's pin, which the engine reads back (nil: none), pin.go.
	pinCons [][]engine.Constraint
}

func (j *jobRun) key() string { return j.w.Tenant + "/" + j.w.ID }

// groupMatches reports whether a device group satisfies a request name
// ("gpu", "nvidia/gpu" or "nvidia/gpu/H200"), as Nomad matches it.
func groupMatches(g *engine.DeviceGroup, name string) bool {
	parts := strings.Split(name, "/")
	switch len(parts) {
	case 1:
		return g.Type == parts[0]
	case 2:
		return g.Vendor == parts[0] && g.Type == parts[1]
	case 3:
		return g.Vendor == parts[0] && g.Type == parts[1] && g.Model == parts[2]
	}
	return false
}

func newNodes(ns []*engine.Node) []*node {
	out := make([]*node, len(ns))
	for i, n := range ns {
		nd := &node{n: n, idx: i, freeCPU: n.CPU, freeMem: n.MemoryMB}
		for _, g := range n.Devices {
			nd.free = append(nd.free, g.Healthy)
		}
		out[i] = nd
	}
	return out
}

// freeGPUs counts the node's unallocated healthy GPUs; none when the
// node is not ready.
func (nd *node) freeGPUs() int {
	if !nd.n.Ready {
		return 0
	}
	n := 0
	for d := range nd.n.Devices {
		if nd.n.Devices[d].Type == "gpu" {
			n += nd.free[d]
		}
	}
	return n
}

// fits returns the device group of nd that can host one allocation of
// group g, -1 for none needed, or ok false.
func (nd *node) fits(g *workload.Group, pick func(n int) int) (int, bool) {
	if !nd.n.Ready || nd.freeCPU < g.CPU || nd.freeMem < g.MemoryMB {
		return 0, false
	}
	if g.GPUs == 0 {
		return -1, true
	}
	var cands [8]int
	c := cands[:0]
	for i := range nd.n.Devices {
		if nd.free[i] >= g.GPUs && groupMatches(&nd.n.Devices[i], g.Device) {
			c = append(c, i)
		}
	}
	switch len(c) {
	case 0:
		return 0, false
	case 1:
		return c[0], true
	}
	// Nomad iterates a node's device groups in map order: any feasible
	// group with the best (equal) score may win.
	return c[pick(len(c))], true
}

func (nd *node) take(a *alloc, g *workload.Group) {
	nd.freeCPU -= g.CPU
	nd.freeMem -= g.MemoryMB
	if a.dev >= 0 {
		nd.free[a.dev] -= a.gpus
	}
	a.nodePos = len(nd.allocs)
	nd.allocs = append(nd.allocs, a)
}

func (nd *node) release(a *alloc, g *workload.Group) {
	nd.freeCPU += g.CPU
	nd.freeMem += g.MemoryMB
	if a.dev >= 0 {
		nd.free[a.dev] += a.gpus
	}
	last := nd.allocs[len(nd.allocs)-1]
	nd.allocs[a.nodePos], last.nodePos = last, a.nodePos
	nd.allocs = nd.allocs[:len(nd.allocs)-1]
}
