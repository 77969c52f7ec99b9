package sim

import (
	"sort"
	"strings"

	"github.com/allot-sh/allot/governor/engine"
)

// The allot policy writes the engine's placement pin (Decision.Nodes)
// into an admitted job as the constraint ${node.unique.id}
// set_contains_any <ids> per task group: Nomad then places the group
// only on those nodes, with its usual placement model among them (random
// order, the first 2 feasible, binpack). A pinned job Nomad cannot
// place gets Unpin: the pin goes and Nomad retries it on every node.
//
// The engine reads the pin back as the real governor does: governor/cluster
// converts the stored job with the pin constraint among its group's
// constraints, so the engine reserves a pinned job's unplaced allocations
// on its pinned nodes only. engineJob carries the same constraint while
// the job is pinned (pinState); a requeue and an unpin remove it.

// The pin constraint as governor/jobmeta writes it (PinTarget,
// PinOperand; the simulator does not import jobmeta,
// TestPinConstraintAsTheGovernorWritesIt checks they agree): the RTarget
// is the sorted, distinct node IDs, comma-separated.
const (
	pinTarget  = "${node.unique.id}"
	pinOperand = "set_contains_any"
)

// setPin records d.Nodes as j's pin: per group index, the sorted indices
// of its pinned nodes; nil when the decision carries none.
func (s *sim) setPin(j *jobRun, nodes map[string][]string) {
	clearPin(j)
	if len(nodes) == 0 {
		return
	}
	j.pin = make([][]int, len(j.w.Groups))
	j.pinCons = make([][]engine.Constraint, len(j.w.Groups))
	for gi, g := range j.w.Groups {
		ids, ok := nodes[g.Name]
		if !ok {
			// A group without a pin places anywhere (nil: every node).
			continue
		}
		idx := make([]int, 0, len(ids))
		known := make([]string, 0, len(ids))
		for _, id := range ids {
			if i, ok := s.nodeIdx[id]; ok && !containsID(known, id) {
				idx = append(idx, i)
				known = append(known, id)
			}
		}
		if len(known) == 0 {
			// As jobmeta.NewPin: a group left without IDs is not pinned.
			continue
		}
		sort.Ints(idx)
		sort.Strings(known)
		j.pin[gi] = idx
		j.pinCons[gi] = []engine.Constraint{{LTarget: pinTarget, Operand: pinOperand, RTarget: strings.Join(known, ",")}}
	}
}

// clearPin removes j's pin and its constraints (a requeue, an unpin).
func clearPin(j *jobRun) {
	j.pin, j.pinCons = nil, nil
}

// containsID tells whether ids holds id (a pin is short).
func containsID(ids []string, id string) bool {
	for _, s := range ids {
		if s == id {
			return true
		}
	}
	return false
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
	clearPin(j)
	s.m.unpins++
	if len(j.pending) > 0 {
		s.evaluate(j, nil)
		if len(j.pending) > 0 {
			s.block(j)
		}
	}
}

// pinState sets what the engine reads about j's pin: Pinned while it has
// one, Blocked while Nomad could not place all of an admitted job, and
// each group's constraints: the pin constraint while the group is pinned,
// none otherwise (the simulated workload's groups have no constraints of
// their own; the real governor appends the pin after the user's).
func pinState(ej *engine.Job, j *jobRun) {
	ej.Pinned = j.pin != nil
	ej.Blocked = j.admitted && len(j.pending) > 0
	for gi := range ej.Groups {
		var cons []engine.Constraint
		if j.pinCons != nil {
			cons = j.pinCons[gi]
		}
		ej.Groups[gi].Constraints = cons
	}
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}
