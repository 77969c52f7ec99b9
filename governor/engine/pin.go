package engine

import "sort"

// The placement pin (Config.Placement, Decision.Nodes): an admission
// carries, per task group, the nodes the engine's fit packed its
// allocations onto, and the actuator writes them as a node constraint,
// so Nomad places the job where the engine reserved room for it and
// keeps whole nodes free for gangs. Only fresh admissions are pinned:
// changing the constraints of a running job could move its allocations.
// A pinned job Nomad cannot place is unpinned (Unpin), not held.

// pins tells whether an admission of j may carry a pin: placement is
// not left to Nomad, j is no system job, has no placement rules the
// engine does not model (NoPin), and none of its live allocations
// counts as placed (p, its placement).
func (cy *cycle) pins(j *Job, p placement) bool {
	return cy.cfg.Placement != PlacementNomad && !j.System && !j.NoPin && p.live == 0
}

// pinOf returns the pin of admitted job j from the takes of its fit: per
// task group name, the sorted, distinct IDs of the nodes its missing
// allocations were placed on; nil when j is not pinned (pins) or the
// fit placed nothing. Built only for admitted jobs.
func (cy *cycle) pinOf(j *Job, p placement, takes []take) map[string][]string {
	if len(takes) == 0 || !cy.pins(j, p) {
		return nil
	}
	out := make(map[string][]string, len(j.Groups))
	for _, tk := range takes {
		name := j.Groups[tk.group].Name
		ids := out[name]
		if !containsString(ids, tk.fn.node.ID) {
			out[name] = append(ids, tk.fn.node.ID)
		}
	}
	for _, ids := range out {
		sort.Strings(ids)
	}
	return out
}

// containsString tells whether ids holds id (a group's pin is short: a
// linear scan beats a set).
func containsString(ids []string, id string) bool {
	for _, s := range ids {
		if s == id {
			return true
		}
	}
	return false
}

// unpinBlocked notes admitted job j for Unpin when it carries the
// governor's pin and Nomad cannot place it (a blocked evaluation): a
// pinned node went down, the job was scaled up, or a job registered
// straight to Nomad took the room. The job stays admitted and keeps its
// reservation; without the pin Nomad places it wherever it fits.
func (cy *cycle) unpinBlocked(j *Job) {
	if j.State == Admitted && j.Pinned && j.Blocked {
		cy.unpins = append(cy.unpins, j)
	}
}

// decideUnpins decides Unpin for the noted jobs that the walk did not
// requeue or stop (a preemption victim loses its pin with its
// requeue), after the walk, so one job never gets two decisions.
func (cy *cycle) decideUnpins() {
	for _, j := range cy.unpins {
		if !cy.pre.requeued[j.Key()] && !cy.held[j.Key()] {
			cy.decide(j, Unpin, "admitted and pinned, but blocked in Nomad: the placement pin is removed so Nomad may place the job on any node (it stays admitted)")
		}
	}
}
