package cluster

import (
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/engine"
)

// Blocked evaluations tell the governor that Nomad could not place a job
// it admitted: Nomad's scheduler found no node with room, created a
// blocked evaluation, and waits for capacity (say, a node was drained or
// the governor's view of free capacity was wrong). The store keeps them
// per job so that the job's verdict says "blocked in Nomad" rather than
// "running" (engine.Job.Blocked); the job keeps its reservation.
//
// A blocked evaluation stays "blocked" while Nomad retries it (a retry
// that fails again reblocks the same evaluation); it ends "complete" once
// the job is placed, or "canceled" when a newer one replaces it. Only
// evaluations for the job's current version count (blockedAt).

// noteEval records evaluation ev's status (s.mu held). It does not move
// the store's generation (Gen): Blocked is read by the cycle, from every
// Snapshot (blockedAt), and a blocked evaluation changes no accounting
// (the job keeps its reservation, nodes and allocations are what they
// were), so the proxy's admission base built from an earlier Snapshot
// stays valid. Moving Gen here made a burst of blocked evaluations (each
// job registered straight to Nomad into a full pool gets one) rebuild
// that base on every proxied admission. The event's frame still signals
// Changed, so a cycle sees the evaluation.
func (s *Store) noteEval(ev *api.Evaluation) {
	if ev == nil || ev.ID == "" {
		return
	}
	key := ev.Namespace + "/" + ev.JobID
	if ev.Status == api.EvalStatusBlocked {
		if s.blocked[key] == nil {
			s.blocked[key] = map[string]uint64{}
		}
		s.blocked[key][ev.ID] = ev.JobModifyIndex
		return
	}
	if _, ok := s.blocked[key][ev.ID]; ok {
		delete(s.blocked[key], ev.ID)
		if len(s.blocked[key]) == 0 {
			delete(s.blocked, key)
		}
	}
}

// blockedAt tells whether Nomad holds a blocked evaluation for job j's
// current version (s.mu held). A reservation the proxy made is a version
// Nomad has not seen: nothing of it is blocked yet.
func (s *Store) blockedAt(j *engine.Job) bool {
	if j.Reserved {
		return false
	}
	for _, v := range s.blocked[j.Key()] {
		if v >= j.Version {
			return true
		}
	}
	return false
}

// Blocked tells whether Nomad holds a blocked evaluation for the current
// version of job ns/id.
func (s *Store) Blocked(ns, id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	j, ok := s.jobs[ns+"/"+id]
	return ok && s.blockedAt(j)
}
