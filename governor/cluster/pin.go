package cluster

import (
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// pinAt is the verified placement pin of one stored job version.
type pinAt struct {
	version uint64
	pin     jobmeta.Pin
}

// notePin remembers the pin of converted job c when the store took c
// (s.mu held). The engine's view says only whether a job is pinned
// (engine.Job.Pinned); the proxy needs the exact constraint to drop a
// pin a user sends back (`nomad job inspect` output) and nothing else.
func (s *Store) notePin(c *engine.Job, pin jobmeta.Pin) {
	if s.jobs[c.Key()] != c {
		return // an older version, or a reservation the store keeps
	}
	if !c.Pinned {
		delete(s.pins, c.Key())
		return
	}
	s.pins[c.Key()] = pinAt{version: c.Version, pin: pin}
}

// PinOf is the placement pin the verified record of stored job j names
// (nil when j is not pinned, or is not the version the store verified:
// a reservation of the proxy, a newer or older copy).
func (s *Store) PinOf(j *engine.Job) jobmeta.Pin {
	if j == nil || !j.Pinned {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if p, ok := s.pins[j.Key()]; ok && p.version == j.Version {
		return p.pin
	}
	return nil
}

// Placement rules the engine does not model (engine.Job.NoPin).
const (
	distinctHosts    = "distinct_hosts"
	distinctProperty = "distinct_property"
)

// noPin reports whether the governor must never pin j: spread blocks (job
// or group), distinct_hosts or distinct_property constraints (job, group
// or task), which the engine's fit does not model; affinities (job, group,
// task or device), the user's placement preferences, which a pin to the
// nodes the engine packed the job onto would override; and periodic and
// parameterized parents, whose children inherit the parent's
// constraints, so a pinned parent would pin every child.
func noPin(j *api.Job) bool {
	if j.IsPeriodic() || j.IsParameterized() || len(j.Spreads) > 0 || len(j.Affinities) > 0 || distinct(j.Constraints) {
		return true
	}
	for _, tg := range j.TaskGroups {
		if tg == nil {
			continue
		}
		if len(tg.Spreads) > 0 || len(tg.Affinities) > 0 || distinct(tg.Constraints) {
			return true
		}
		for _, t := range tg.Tasks {
			if t != nil && (distinct(t.Constraints) || len(t.Affinities) > 0 || deviceAffinities(t.Resources)) {
				return true
			}
		}
	}
	return false
}

// deviceAffinities reports whether a task's device requests state
// affinities (which device model or node to prefer).
func deviceAffinities(r *api.Resources) bool {
	if r == nil {
		return false
	}
	for _, d := range r.Devices {
		if d != nil && len(d.Affinities) > 0 {
			return true
		}
	}
	return false
}

// distinct reports whether cs holds a distinct_hosts or distinct_property
// constraint (Nomad's jobspec writes them as the Operand).
func distinct(cs []*api.Constraint) bool {
	for _, c := range cs {
		if c != nil && (c.Operand == distinctHosts || c.Operand == distinctProperty) {
			return true
		}
	}
	return false
}
