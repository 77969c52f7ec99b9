package cluster

import (
	"time"

	"github.com/allot-sh/allot/governor/engine"
)

// The store stays bounded however long the governor runs (audit #20):
//
//   - jobs: a finished job that is not held (dead: it needs nothing more)
//     is kept for DeadJobRetention, then dropped. Nomad emits no event when
//     it garbage-collects a job, so this is how the store forgets them; a
//     job that comes back is stored again by its next event.
//   - allocations: finished allocations count only for the running
//     version of their job (engine placementOf); the others, and every
//     allocation of a job the store no longer holds, are dropped (Nomad
//     emits no event when it collects allocations either). Their
//     checkpoint times go with them.
//   - deregAt: an entry matters only while its job is held at a version
//     at or below it; it goes once the job is newer or gone.
//   - reservations of the proxy (PutEngineJob) end when Nomad's version of
//     the job arrives, when the proxy undoes them, or after
//     ReservationTTL (a write that never came back).
//
// The sweep runs at most every pruneEvery, after frames of the event
// stream and after full listings.

// DeadJobRetention is how long a finished job stays in the store.
const DeadJobRetention = time.Hour

// ReservationTTL bounds a proxy reservation Nomad never confirmed.
const ReservationTTL = 2 * time.Minute

// pruneEvery is the shortest time between two sweeps.
const pruneEvery = time.Minute

// reservation is a job the proxy admitted before Nomad stored it.
type reservation struct {
	job *engine.Job
	at  time.Time
	// over is the Version of the stored job it replaced (0: none): a
	// stored version above it is the reserved write itself.
	over uint64
}

// SetClock replaces the store's clock (time.Now); for tests.
func (s *Store) SetClock(now func() time.Time) {
	s.mu.Lock()
	s.clock = now
	s.mu.Unlock()
}

// reserve records j as a reservation (s.mu held). A reservation is never
// dead, whatever the caller's body said of its status, and only
// allocations Nomad places for it count for it (engine.Job.Reserved).
func (s *Store) reserve(j *engine.Job) (*engine.Job, *engine.Job) {
	cp := *j
	cp.Reserved, cp.Dead = true, false
	prev := s.jobs[cp.Key()]
	r := reservation{job: &cp, at: s.clock()}
	if prev != nil {
		r.over = prev.Version
		if old, ok := s.reserved[cp.Key()]; ok {
			r.over = old.over
		}
	}
	s.reserved[cp.Key()] = r
	s.jobs[cp.Key()] = &cp
	delete(s.deadAt, cp.Key())
	return &cp, prev
}

// keepReserved reports whether stored job c must not replace the proxy's
// reservation of its key: it is the version the reservation replaces (or
// older), so the reserved write has not arrived yet. A newer version ends
// the reservation (s.mu held).
func (s *Store) keepReserved(c *engine.Job) bool {
	r, ok := s.reserved[c.Key()]
	if !ok {
		return false
	}
	if c.Version > r.over || s.clock().Sub(r.at) > ReservationTTL {
		delete(s.reserved, c.Key())
		return false
	}
	return true
}

// restoreReservations puts the live reservations back after a full
// listing replaced the jobs (s.mu held): a resync must not give the same
// capacity twice (audit #24).
func (s *Store) restoreReservations() {
	for key, r := range s.reserved {
		c, listed := s.jobs[key]
		switch {
		case listed && s.keepReserved(c), !listed && s.clock().Sub(r.at) <= ReservationTTL:
			s.jobs[key] = r.job
		case !listed:
			delete(s.reserved, key)
		}
	}
}

// trackDead notes when job c was first seen finished (s.mu held).
func (s *Store) trackDead(c *engine.Job) {
	if !c.Dead || c.State == engine.Queued {
		delete(s.deadAt, c.Key())
		return
	}
	if _, ok := s.deadAt[c.Key()]; !ok {
		s.deadAt[c.Key()] = s.clock()
	}
}

// forget drops job key and everything the store keeps for it (s.mu held).
func (s *Store) forget(key string) {
	delete(s.blocked, key)
	delete(s.jobs, key)
	delete(s.deadAt, key)
	delete(s.deregAt, key)
	delete(s.reserved, key)
	delete(s.pins, key)
	for id, a := range s.allocs {
		if a.Namespace+"/"+a.JobID == key {
			delete(s.allocs, id)
			delete(s.ckpt, id)
		}
	}
}

// maybePrune sweeps when the last sweep is older than pruneEvery (s.mu
// held).
func (s *Store) maybePrune() {
	if now := s.clock(); now.Sub(s.prunedAt) >= pruneEvery {
		s.prune(now)
	}
}

// Prune sweeps the store now (see the top of prune.go).
func (s *Store) Prune() {
	s.mu.Lock()
	s.prune(s.clock())
	s.mu.Unlock()
	s.notify()
}

func (s *Store) prune(now time.Time) {
	s.prunedAt = now
	for key, at := range s.deadAt {
		if now.Sub(at) > DeadJobRetention {
			s.forget(key)
			s.gen++
		}
	}
	for key, r := range s.reserved {
		if now.Sub(r.at) > ReservationTTL {
			delete(s.reserved, key)
			if s.jobs[key] == r.job {
				delete(s.jobs, key)
			}
			s.gen++
		}
	}
	for key := range s.blocked {
		if _, ok := s.jobs[key]; !ok {
			delete(s.blocked, key) // Nomad collected the job
		}
	}
	for key := range s.deregAt {
		if j, ok := s.jobs[key]; !ok && !s.verify[key] || ok && j.Version > s.deregAt[key] {
			delete(s.deregAt, key)
		}
	}
	for id, a := range s.allocs {
		if !s.allocCounts(a) {
			delete(s.allocs, id)
			delete(s.ckpt, id)
			s.gen++
		}
	}
}

// allocCounts tells whether allocation a can still matter: it is live or
// stopping (it holds resources), or it finished under the running version
// of a job the store holds.
func (s *Store) allocCounts(a *engine.Alloc) bool {
	if a.Live || a.Stopping {
		return true
	}
	j, ok := s.jobs[a.Namespace+"/"+a.JobID]
	if !ok || !a.Complete || j.Dead || j.Reserved {
		return false
	}
	return (j.State == engine.Admitted || j.State == engine.Direct) && a.CreateIndex >= j.Version
}
