package sim

import (
	"time"

	"github.com/allot-sh/allot/governor/engine"
)

// cycle is one governor cycle: the real engine decides on a snapshot of
// the simulated cluster; admitted jobs go to Nomad (the placement model),
// requeued jobs (preemption victims, gang timeouts) stop and queue again.
func (s *sim) cycle() {
	s.dirty = false
	s.m.lastCycle = s.now
	s.m.cycles++
	snap := s.snapshot()
	snap.Claims, snap.Taken, snap.MoveHolds = s.claims, s.taken, s.moveHolds
	plan := engine.Decide(s.opts.Engine, snap)
	s.claims, s.taken, s.moveHolds = plan.Claims, plan.Taken, plan.MoveHolds
	s.latest, s.heldSince = plan, nil
	if s.opts.OnCycle != nil {
		s.opts.OnCycle(snap, plan)
	}
	byKey := map[string]*jobRun{}
	for _, j := range s.held {
		byKey[j.key()] = j
	}
	for _, j := range s.jobs {
		if j.admitted && !j.done {
			byKey[j.key()] = j
		}
	}
	for _, j := range s.held {
		j.blocked = plan.Verdicts[j.key()].Failed()
	}
	var admits []*jobRun
	var unpins []*jobRun
	for _, d := range plan.Decisions {
		j := byKey[d.Namespace+"/"+d.JobID]
		if j == nil {
			continue
		}
		switch {
		case d.Action == engine.Admit && j.held:
			s.setPin(j, d.Nodes)
			admits = append(admits, j)
		case d.Action == engine.Requeue && j.admitted:
			j.notePreemptor(d.Preemptor)
			s.requeue(j)
		case d.Action == engine.Unpin && j.admitted:
			unpins = append(unpins, j)
		}
	}
	// Removing a pin frees nothing: the unpinned jobs try every node
	// after this plan's admissions took their pinned room.
	for _, j := range admits {
		s.admit(j)
	}
	for _, j := range unpins {
		s.unpin(j)
	}
}

// proxyAdmit models a submission through the governor's proxy
// (reconcile.Reserve): the job is decided on its own at once against what
// runs and is admitted (engine.Base), unless the latest cycle's plan
// leaves it to the next cycle (Plan.HeldBackBy: a starving head, or
// jobs of its pool waiting for capacity; Plan.BorrowHeldBy: it would
// borrow from a cohort whose lending is held), or jobs it held since that
// plan wait for capacity in its pool (the reconciler's heldSinceAhead);
// admitted, it goes to Nomad without waiting for a cycle, else it stays
// held for the next one.
func (s *sim) proxyAdmit(j *jobRun) {
	ej := s.engineJob(j)
	if s.latest != nil && s.latest.HeldBackBy(s.opts.Engine, ej, epoch.Add(s.now)) != "" {
		return // decided before the base is built: under contention most are
	}
	if s.heldSince[ej.Pool()] > 0 {
		return
	}
	v := engine.Prepare(s.opts.Engine, s.snapshot()).Decide(ej, false)
	if v.State == engine.Admitted && s.latest != nil && s.latest.BorrowHeldBy(s.opts.Engine, ej, v.Checks, epoch.Add(s.now)) != "" {
		return // its cohort's lending is held: the next cycle decides
	}
	if v.State != engine.Admitted {
		if engine.WaitsForCapacity(v.Checks) {
			if s.heldSince == nil {
				s.heldSince = map[string]int{}
			}
			s.heldSince[ej.Pool()]++
		}
		return
	}
	s.m.proxyAdmits++
	s.setPin(j, v.Nodes)
	s.admit(j)
}

// preemptorsKept is how many preemptors the governor's
// allot.preempted-by keeps (governor/jobmeta; the simulator may not
// import that Nomad-facing package, so TestKeepsPreemptorsAsTheMeta
// checks this copy of its rule against it).
const preemptorsKept = 8

// notePreemptor records by ("ns/id"; none when empty) among j's
// preemptors as the governor's allot.preempted-by keeps them: once, most
// recent last, the newest eight, so the engine's rule that a victim
// never preempts any of them (docs/governor.md, No loops) holds in the
// simulator as on the stack.
func (j *jobRun) notePreemptor(by string) {
	if by == "" {
		return
	}
	keep := make([]string, 0, len(j.preemptedBy)+1)
	for _, k := range j.preemptedBy {
		if k != by {
			keep = append(keep, k)
		}
	}
	if keep = append(keep, by); len(keep) > preemptorsKept {
		keep = keep[len(keep)-preemptorsKept:]
	}
	j.preemptedBy = keep
}

func (s *sim) admit(j *jobRun) {
	j.held, j.admitted = false, true
	j.admittedAt = s.now
	s.removeHeld(j)
	if j.pin != nil {
		s.m.pins++
	}
	s.toNomad(j)
	if len(j.pending) > 0 && s.opts.Engine.GangTimeout > 0 {
		// Nomad placed it only partly: the gang timeout needs a cycle.
		s.push(event{t: s.now + s.opts.Engine.GangTimeout + time.Second, kind: evCycle})
	}
}

// requeue stops every allocation of an admitted job and queues it again
// at its original queue time.
func (s *sim) requeue(j *jobRun) {
	s.interrupt(j)
	s.m.preemption(j)
	for len(j.allocs) > 0 {
		a := j.allocs[len(j.allocs)-1]
		if s.opts.StopDelay > 0 {
			s.beginStop(a)
			continue
		}
		s.stopAlloc(a)
	}
	j.pending = j.pending[:0]
	clearPin(j)
	for i, b := range s.blocked {
		if b == j {
			s.blocked = append(s.blocked[:i], s.blocked[i+1:]...)
			break
		}
	}
	j.admitted, j.held = false, true
	j.requeues++
	j.requeuedAt = s.now
	s.held = append(s.held, j)
	s.dirty = true
	// The back-off ends without any event of its own: cycle then.
	s.push(event{t: s.now + backoff(s.opts.Engine, j.requeues) + time.Second, kind: evCycle})
}

func (s *sim) removeHeld(j *jobRun) {
	for i, h := range s.held {
		if h == j {
			s.held = append(s.held[:i], s.held[i+1:]...)
			return
		}
	}
}

// snapshot is what the governor would read from Nomad now. Jobs come in
// submission order (the engine's result does not depend on it).
func (s *sim) snapshot() *engine.Snapshot {
	snap := &engine.Snapshot{Now: epoch.Add(s.now), Tenants: s.tenants, Nodes: s.engNodes,
		Allocs: make([]*engine.Alloc, 0, len(s.live))}
	for _, a := range s.live {
		fillAlloc(a, s.now, s.opts.StartDelay)
		snap.Allocs = append(snap.Allocs, a.eng)
	}
	for _, a := range s.stopping {
		snap.Allocs = append(snap.Allocs, a.eng)
	}
	for s.firstOpen < len(s.jobs) && s.jobs[s.firstOpen].done {
		s.firstOpen++
	}
	for _, j := range s.jobs[s.firstOpen:s.submitted] {
		if (j.held || j.admitted) && !j.done {
			snap.Jobs = append(snap.Jobs, s.engineJob(j))
		}
	}
	return s.withFinished(snap)
}

// deadRetention is how long the governor's store keeps a finished job
// (cluster.DeadJobRetention): Nomad lists it, dead, until its garbage
// collection, and the engine reads who preempted whom from it (a tenant
// does not take back from one whose preemptions requeued its jobs in the
// last 5 minutes).
const deadRetention = time.Hour

// withFinished adds to snap the jobs that finished within deadRetention,
// dead, as the governor's snapshots hold them.
func (s *sim) withFinished(snap *engine.Snapshot) *engine.Snapshot {
	n := 0
	for n < len(s.finished) && s.now-s.finished[n].end > deadRetention {
		n++
	}
	s.finished = s.finished[n:]
	for _, j := range s.finished {
		ej := s.engineJob(j)
		ej.Dead = true
		snap.Jobs = append(snap.Jobs, ej)
	}
	return snap
}

func (s *sim) engineJob(j *jobRun) *engine.Job {
	if j.eng != nil {
		j.eng.State = engine.Admitted
		if j.held {
			j.eng.State = engine.Queued
		}
		j.eng.Version = uint64(1 + j.requeues)
		fillJob(j.eng, j, s.now)
		pinState(j.eng, j)
		j.eng.Estimate = s.est.Estimate(estimateKey(j))
		return j.eng
	}
	w := j.w
	ej := &engine.Job{Namespace: w.Tenant, ID: w.ID, Class: w.Class, State: engine.Admitted,
		QueuedAt: epoch.Add(j.queuedAt), SubmittedAt: epoch.Add(w.Submit), Version: uint64(1 + j.requeues),
		NodePool: w.Pool}
	if j.held {
		ej.State = engine.Queued
	}
	if ej.NodePool == "" {
		ej.NodePool = "default"
	}
	for _, g := range w.Groups {
		eg := engine.Group{Name: g.Name, Count: g.Count, CPU: g.CPU, MemoryMB: g.MemoryMB,
			SavesOnStop: s.opts.CheckpointOnStop || w.SavesOnStop}
		if g.GPUs > 0 {
			eg.Devices = []engine.DeviceRequest{{Name: g.Device, Count: g.GPUs}}
		}
		ej.Groups = append(ej.Groups, eg)
	}
	fillJob(ej, j, s.now)
	pinState(ej, j)
	ej.MaxRuntime = w.MaxRuntime
	ej.Estimate = s.est.Estimate(estimateKey(j))
	j.eng = ej
	return ej
}
