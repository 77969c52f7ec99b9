package sim

import (
	"sort"

	"github.com/allot-sh/allot/governor/engine"
)

// The allot policy writes the engine's placement pin (Decision.Nodes)
// into an admitted job as the constraint ${node.unique.id}
// set_contains_any <ids> per task group: Nomad then places the group
// only on those nodes, with its usual placement model among them (random
// order, the first 2 feasible, binpack). A pinned job Nomad cannot
// place gets Unpin: the pin goes and Nomad retries it on every node.

// setPin records d.Nodes as j's pin: per group index, the sorted indices
// of its pinned nodes; nil when the decision carries none.
func (s *sim) setPin(j *jobRun, nodes map[string][]string) {
	j.pin = nil
	if len(nodes) == 0 {
		return
	}
	j.pin = make([][]int, len(j.w.Groups))
	for gi, g := range j.w.Groups {
		ids, ok := nodes[g.Name]
		if !ok {
			// A group without a pin places anywhere (nil: every node).
			continue
		}
		idx := make([]int, 0, len(ids))
		for _, id := range ids {
			if i, ok := s.nodeIdx[id]; ok {
				idx = append(idx, i)
			}
		}
		sort.Ints(idx)
		j.pin[gi] = idx
	}
}

// candsFor restricts cands (nil: every node) to the nodes group gi of j
// is pinned to, if it is pinned.
func candsFor(j *jobRun, gi int, cands []int) []int {
	if j.pin == nil || j.pin[gi] == nil {
		return cands
	}
	pin := j.pin[gi]
	if cands == nil {
		return pin
	}
	// Both sorted: intersect by merging.
	out := make([]int, 0, minInt(len(pin), len(cands)))
	for a, b := 0, 0; a < len(pin) && b < len(cands); {
		switch {
		case pin[a] < cands[b]:
			a++
		case pin[a] > cands[b]:
			b++
		default:
			out = append(out, pin[a])
			a++
			b++
		}
	}
	return out
}

// unpin removes j's pin (engine.Unpin) and lets Nomad evaluate the job
// again on every node, as the job's new version triggers.
func (s *sim) unpin(j *jobRun) {
	if j.pin == nil {
		return
	}
	j.pin = nil
	s.m.unpins++
	if len(j.pending) > 0 {
		s.evaluate(j, nil)
		if len(j.pending) > 0 {
			s.block(j)
		}
	}
}

// pinState sets what the engine reads about j's pin: Pinned while it has
// one, Blocked while Nomad could not place all of an admitted job.
func pinState(ej *engine.Job, j *jobRun) {
	ej.Pinned = j.pin != nil
	ej.Blocked = j.admitted && len(j.pending) > 0
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}
