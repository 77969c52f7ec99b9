package engine

import "strings"

// placement is how far a job's allocations go toward what its current
// version asks for.
type placement struct {
	// missing holds, per group, how many allocations Nomad still has to
	// place.
	missing []int
	// replaced are live allocations the current version does not keep:
	// their shape (per-allocation resources) differs from what their group
	// asks now, or their group is gone. Nomad replaces them (a destructive
	// update), so they count as missing and what they hold is freed.
	replaced []*Alloc
	// started counts the allocations that count as placed and have left
	// pending.
	started int
	// live counts the live allocations that count as placed: a job with
	// any is running, and its update is never pinned (pin.go).
	live int
}

// placementOf splits the job's allocations. An allocation counts as
// placed when it is live with the shape its group asks for, or when it
// finished successfully under the job's current version (Nomad does not
// run it again). Finished allocations of earlier versions, failed and
// lost ones count for nothing: re-running a finished batch job is weighed
// in full (audit #7).
func (cy *cycle) placementOf(j *Job) placement {
	p := placement{missing: cy.counts(len(j.Groups))}
	if j.Dead && j.State != Queued && !j.Reserved {
		// A finished job needs nothing more. (Nomad reports a held job,
		// which is stopped, as dead too: it still needs everything.)
		return p
	}
	for i := range j.Groups {
		p.missing[i] = cy.want(j, i)
	}
	if j.State == Queued && !j.System && cy.inSnapshot(j) {
		// A held job of the snapshot (not a submission the proxy judges):
		// Nomad stops whatever it still runs (a preemption victim whose
		// stop Nomad has not planned yet), so none of it counts as placed.
		// Counted as placed, the victim would be admitted again at once,
		// onto the very allocation that is stopping.
		return p
	}
	allocs := cy.byJob[idOf(j)]
	for _, a := range allocs {
		gi := groupIndex(j, a.Group)
		switch {
		case gi < 0:
			if a.Live {
				p.replaced = append(p.replaced, a)
			}
		case a.Live && sameShape(a, &j.Groups[gi]):
			p.missing[gi]--
			p.live++
			if a.Started {
				p.started++
			}
		case a.Live:
			p.replaced = append(p.replaced, a)
		case a.Complete && finishedCounts(j, a):
			p.missing[gi]--
			p.started++
		}
	}
	for i, n := range p.missing {
		if n < 0 {
			p.missing[i] = 0
		}
	}
	return p
}

// missing returns, per group, how many allocations of j Nomad has not
// placed yet.
func (cy *cycle) missing(j *Job) []int { return cy.placementOf(j).missing }

// counts returns a slice of n zeroed ints cut from the cycle's slab: the
// per-job counts of a cycle live as long as the cycle, and one
// allocation per 4096 of them keeps queue walks cheap.
func (cy *cycle) counts(n int) []int {
	if n > len(cy.ints) {
		cy.ints = make([]int, maxInt(4096, n))
	}
	out := cy.ints[:n:n]
	cy.ints = cy.ints[n:]
	return out
}

// want is how many allocations group gi of j runs: its count, or for a
// system job one per eligible node.
func (cy *cycle) want(j *Job, gi int) int {
	if j.System {
		return len(cy.cap.wholeNodes(j, &j.Groups[gi]))
	}
	return j.Groups[gi].Count
}

// finishedCounts tells whether finished allocation a belongs to the
// version of j that runs: created at or after the job's latest write.
// Only for jobs that run; a queued job, or a reservation for a version
// Nomad has not stored yet, is a new version.
func finishedCounts(j *Job, a *Alloc) bool {
	return (j.State == Admitted || j.State == Direct) && !j.Reserved && a.CreateIndex >= j.Version
}

func groupIndex(j *Job, name string) int {
	for i := range j.Groups {
		if j.Groups[i].Name == name {
			return i
		}
	}
	return -1
}

// deviceCount is how many device instances allocation a holds.
func deviceCount(a *Alloc) int {
	n := 0
	for _, c := range a.Devices {
		n += c
	}
	return n
}

// sameShape tells whether allocation a holds what one allocation of g
// asks for: the same memory, CPU (unless the group reserves cores) and
// device instances.
func sameShape(a *Alloc, g *Group) bool {
	if a.MemoryMB != g.MemoryMB || (!g.Cores && a.CPU != g.CPU) {
		return false
	}
	total, want := deviceCount(a), 0
	for _, d := range g.Devices {
		want += d.Count
		have := 0
		for id, n := range a.Devices {
			if deviceIDMatches(d.Name, id) {
				have += n
			}
		}
		if have < d.Count {
			return false
		}
	}
	return total == want
}

// deviceIDMatches tells whether a jobspec device name ("gpu",
// "nvidia/gpu", "nvidia/gpu/H200") names device group id
// ("vendor/type/model").
func deviceIDMatches(name, id string) bool {
	switch strings.Count(name, "/") {
	case 2:
		return name == id
	case 1: // vendor/type: id starts with it and a "/"
		return len(id) > len(name) && id[len(name)] == '/' && id[:len(name)] == name
	}
	// type: the middle part of id
	i := strings.IndexByte(id, '/')
	if i < 0 {
		return false
	}
	rest := id[i+1:]
	return len(rest) > len(name) && rest[len(name)] == '/' && rest[:len(name)] == name
}

// releaseReplaced frees, in usage and capacity, what the allocations an
// update replaces hold: the update is weighed by what it adds on top of
// what it keeps (audit #12). It returns them for restoreReplaced.
func (cy *cycle) releaseReplaced(j *Job, replaced []*Alloc) {
	acct := cy.accts[j.Namespace]
	for _, a := range replaced {
		if cy.replaced[a.ID] {
			continue
		}
		cy.replaced[a.ID] = true
		cy.cap.shift(a, 1)
		if acct != nil {
			acct.sub(allocVector(a))
		}
	}
}

// restoreReplaced undoes releaseReplaced.
func (cy *cycle) restoreReplaced(j *Job, replaced []*Alloc) {
	acct := cy.accts[j.Namespace]
	for _, a := range replaced {
		if !cy.replaced[a.ID] {
			continue
		}
		delete(cy.replaced, a.ID)
		cy.cap.shift(a, -1)
		if acct != nil {
			acct.add(allocVector(a))
		}
	}
}
