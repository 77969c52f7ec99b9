package idle

import (
	"sort"
	"sync"
	"time"
)

// Observation is one allocation's sample for one period.
type Observation struct {
	Watch  Watch
	Sample Sample
}

// Event is a ladder transition, for the ledger, metrics and actuation.
type Event struct {
	Kind      Transition
	Candidate Candidate
	Action    Action
}

// Detector keeps the ladder of every watched allocation. It is safe for
// concurrent use: Tick runs on the governor's loop, Candidates serves reads.
type Detector struct {
	mu       sync.Mutex
	trackers map[string]*tracker
	zombies  zombieTracker
}

// NewDetector returns an empty detector.
func NewDetector() *Detector {
	return &Detector{trackers: map[string]*tracker{}, zombies: zombieTracker{seen: map[deviceKey]*Zombie{}}}
}

// Tick applies one period's observations. Allocations not observed are no
// longer live and are forgotten. tenant returns a namespace's policy.
func (d *Detector) Tick(obs []Observation, tenant func(ns string) Tenant) []Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	live := make(map[string]bool, len(obs))
	var events []Event
	for _, o := range obs {
		live[o.Watch.AllocID] = true
		t := d.trackers[o.Watch.AllocID]
		if t == nil {
			t = &tracker{c: Candidate{Watch: o.Watch, Step: StepObserve}}
			d.trackers[o.Watch.AllocID] = t
		}
		t.c.Watch = o.Watch
		ten := tenant(o.Watch.Namespace)
		var ex *Exemption
		if e, ok := ten.Exempt[o.Watch.JobID]; ok {
			ex = &e
		}
		if k := t.observe(o.Sample, ten.Policy, ex); k != None {
			events = append(events, Event{Kind: k, Candidate: clone(t.c), Action: ten.Policy.Action})
		}
	}
	for id := range d.trackers {
		if !live[id] {
			delete(d.trackers, id)
		}
	}
	return events
}

// Reclaimed records that an allocation's reclaim was carried out, so it is
// not asked for again; the job's other allocations stop with it.
func (d *Detector) Reclaimed(allocID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.trackers[allocID]
	if t == nil {
		return
	}
	for _, o := range d.trackers {
		if o.c.Namespace == t.c.Namespace && o.c.JobID == t.c.JobID {
			o.c.Step = StepReclaimed
		}
	}
}

// jobDue reports whether every followed allocation of a job is due for
// reclaim: a job is requeued as a whole, so one idle allocation of a
// busy multi-allocation job is not enough.
func (d *Detector) jobDue(ns, job string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range d.trackers {
		if t.c.Namespace == ns && t.c.JobID == job && t.c.Step != StepReclaim {
			return false // busy, warned, or already reclaimed with another allocation
		}
	}
	return true
}

// Candidates lists the allocations seen idle or on the ladder (not the
// busy ones), ordered by namespace, job, allocation.
func (d *Detector) Candidates() []Candidate {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Candidate
	for _, t := range d.trackers {
		if t.c.Step != StepObserve || !t.c.IdleSince.IsZero() {
			out = append(out, clone(t.c))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.JobID != b.JobID {
			return a.JobID < b.JobID
		}
		return a.AllocID < b.AllocID
	})
	return out
}

// Watched is the number of allocations followed.
func (d *Detector) Watched() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.trackers)
}

type idleTotal struct {
	namespace string
	seconds   float64
}

// idleTotals is every followed allocation's idle device-seconds so far.
func (d *Detector) idleTotals() map[string]idleTotal {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]idleTotal, len(d.trackers))
	for id, t := range d.trackers {
		out[id] = idleTotal{t.c.Namespace, t.c.IdleDeviceSeconds}
	}
	return out
}

func clone(c Candidate) Candidate {
	c.Samples = append([]Sample(nil), c.Samples...)
	if c.Exemption != nil {
		e := *c.Exemption
		c.Exemption = &e
	}
	return c
}

// Latency is how long after IdleSince a candidate was warned.
func (c Candidate) Latency() time.Duration { return c.WarnedAt.Sub(c.IdleSince) }
