// Package idle finds accelerators held by allocations that do not use them
// (idle-held, truly idle) and devices busy with no live allocation
// (zombies), warns, and after a grace reclaims them with a checkpoint-aware
// stop and a requeue. Decisions are pure functions of samples and a clock;
// the Nomad reading and the actuation live in separate files.
package idle

import (
	"time"
)

// Waste classes.
const (
	// ClassIdleHeld: utilization at or below the threshold with device
	// memory held.
	ClassIdleHeld = "idle-held"
	// ClassIdle: utilization at or below the threshold, little memory held.
	ClassIdle = "idle"
	// ClassZombie: device memory or processes with no live allocation.
	ClassZombie = "zombie"
	// ClassUnclaimed: a service job (notebook, server) running past the
	// policy's TTL since its owner last submitted it, whatever its use.
	ClassUnclaimed = "unclaimed"
)

// Step is where an allocation stands on the ladder.
type Step string

// Ladder steps.
const (
	// StepObserve: busy, or idle for less than the window.
	StepObserve Step = "observe"
	// StepSuspect: idle for the whole window; the grace runs, no warning
	// yet. Busy again (or a gap in telemetry) goes back to observe
	// silently: the owner was never warned, so nothing is withdrawn.
	StepSuspect Step = "suspect"
	// StepWarned: still idle at the notice before the end of the grace;
	// the owner is warned. Busy again withdraws the warning.
	StepWarned    Step = "warned"
	StepReclaim   Step = "reclaim"
	StepReclaimed Step = "reclaimed"
	StepExempt    Step = "exempt"
)

// Sample is one period's telemetry of one allocation's devices. Known is
// false when any of its devices reported nothing: missing telemetry is
// never idle.
type Sample struct {
	At        time.Time `json:"at"`
	Known     bool      `json:"known"`
	UtilPct   float64   `json:"util_pct"`   // the highest of its devices
	MemoryMiB int64     `json:"memory_mib"` // summed over its devices
	Processes int       `json:"processes"`
}

// Watch identifies a watched allocation.
type Watch struct {
	AllocID   string `json:"alloc_id"`
	Namespace string `json:"namespace"`
	JobID     string `json:"job_id"`
	// Priority is the job's priority class; Production jobs are only
	// warned, never stopped.
	Priority   string `json:"priority_class,omitempty"`
	Production bool   `json:"production,omitempty"`
	// Ungoverned: the namespace is not governed, so a requeue would never
	// be admitted again; such allocations are only warned.
	Ungoverned bool `json:"ungoverned,omitempty"`
	Devices    int  `json:"devices"`
	// Service: the job is a service (the unclaimed class applies).
	Service bool `json:"service,omitempty"`
	// LastOwnerAction is when the job's current version was submitted.
	LastOwnerAction time.Time `json:"last_owner_action,omitempty"`
}

// unclaimed reports whether the allocation is past its tenant's TTL with
// no owner action.
func (w Watch) unclaimed(p Policy, at time.Time) bool {
	return p.UnclaimedTTL > 0 && w.Service && !w.LastOwnerAction.IsZero() && at.Sub(w.LastOwnerAction) >= p.UnclaimedTTL
}

// WarnOnly reports whether the allocation may only be warned.
func (w Watch) WarnOnly() bool { return w.Production || w.Ungoverned }

// Candidate is an allocation on the ladder with its evidence.
type Candidate struct {
	Watch
	Class     string    `json:"class,omitempty"`
	Step      Step      `json:"step"`
	IdleSince time.Time `json:"idle_since,omitempty"`
	// SuspectAt is when the window was complete and the grace started.
	SuspectAt time.Time `json:"suspect_at,omitempty"`
	// WarnAt is when the warning is (or was) due: DueAt − notice.
	WarnAt   time.Time `json:"warn_at,omitempty"`
	WarnedAt time.Time `json:"warned_at,omitempty"`
	// DueAt is the end of the grace: the action is taken at the first
	// sample at or after it (and after the warning's).
	DueAt     time.Time  `json:"due_at,omitempty"`
	Exemption *Exemption `json:"exemption,omitempty"`
	// IdleDeviceSeconds is the device time observed idle (devices × time
	// between consecutive idle samples).
	IdleDeviceSeconds float64 `json:"idle_device_seconds"`
	// Samples are the most recent samples, oldest first.
	Samples []Sample `json:"samples"`
}

// MaxSamples is how many recent samples a candidate keeps as evidence.
const MaxSamples = 12

// Transition is what one observation changed.
type Transition int

// Transitions.
const (
	None Transition = iota
	// Suspect: the allocation was idle for the whole window; the grace
	// starts (no warning yet).
	Suspect
	// Warn: the allocation stayed idle until the notice before the end of
	// the grace.
	Warn
	// Cancel: a warned allocation became busy again inside the grace.
	Cancel
	// Reclaim: the grace ended with the allocation still idle; the caller
	// acts and then calls Reclaimed.
	Reclaim
)

// tracker follows one allocation.
type tracker struct {
	c          Candidate
	lastIdleAt time.Time
	// gap: telemetry went missing after the warning; the grace restarts at
	// the next known idle sample, so a stop never follows unseen work.
	gap bool
}

// observe applies one sample under the tenant's policy and exemption.
func (t *tracker) observe(s Sample, p Policy, ex *Exemption) Transition {
	t.c.Samples = append(t.c.Samples, s)
	if len(t.c.Samples) > MaxSamples {
		t.c.Samples = t.c.Samples[len(t.c.Samples)-MaxSamples:]
	}
	if t.c.Step == StepReclaimed {
		return None
	}
	if t.c.unclaimed(p, s.At) {
		return t.unclaimedStep(s, p, ex)
	}
	if t.c.Class == ClassUnclaimed {
		return t.busy() // the owner acted: start over
	}
	if !s.Known {
		return t.unknown()
	}
	if s.UtilPct > p.ThresholdPct {
		return t.busy()
	}
	t.idle(s, p)
	defer func() { t.gap = false }()
	if ex.Active(s.At) {
		return t.exempt(ex)
	}
	t.c.Exemption = nil
	return t.climb(s.At, p)
}

// exempt parks the allocation while an operator's exemption holds; a
// warning already given is withdrawn. When the exemption expires the
// ladder starts from observe with the idle run kept.
func (t *tracker) exempt(ex *Exemption) Transition {
	was := t.c.Step
	e := *ex
	t.c.Exemption, t.c.Step = &e, StepExempt
	t.c.SuspectAt, t.c.WarnAt, t.c.WarnedAt, t.c.DueAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if was == StepWarned || was == StepReclaim {
		return Cancel
	}
	return None
}

// unclaimed climbs the ladder from the moment the TTL ran out, whatever
// the telemetry says: no window, only the grace.
func (t *tracker) unclaimedStep(s Sample, p Policy, ex *Exemption) Transition {
	t.c.Class, t.c.IdleSince, t.gap, t.lastIdleAt = ClassUnclaimed, t.c.LastOwnerAction.Add(p.UnclaimedTTL), false, time.Time{}
	if ex.Active(s.At) {
		return t.exempt(ex)
	}
	t.c.Exemption = nil
	q := p
	q.Window, q.Notice = 0, p.Grace // warned at once: the owner must act
	return t.climb(s.At, q)
}

// unknown: a gap in telemetry. Before a warning it restarts the idle run
// (the allocation may have worked unseen), a suspect included; after it,
// the warning stands and the grace restarts at the next known idle sample.
func (t *tracker) unknown() Transition {
	t.lastIdleAt = time.Time{}
	switch t.c.Step {
	case StepSuspect:
		t.c.Step = StepObserve
		fallthrough
	case StepObserve, StepExempt:
		t.c.IdleSince, t.c.Class = time.Time{}, ""
		t.c.SuspectAt, t.c.WarnAt, t.c.DueAt = time.Time{}, time.Time{}, time.Time{}
	}
	t.gap = true
	return None
}

func (t *tracker) busy() Transition {
	was := t.c.Step
	t.c.Step, t.c.IdleSince, t.c.Class, t.lastIdleAt = StepObserve, time.Time{}, "", time.Time{}
	t.c.SuspectAt, t.c.WarnAt, t.c.WarnedAt, t.c.DueAt, t.gap = time.Time{}, time.Time{}, time.Time{}, time.Time{}, false
	if was == StepWarned || was == StepReclaim {
		return Cancel
	}
	return None
}

func (t *tracker) idle(s Sample, p Policy) {
	if t.c.IdleSince.IsZero() {
		t.c.IdleSince = s.At
	}
	if !t.lastIdleAt.IsZero() {
		t.c.IdleDeviceSeconds += float64(t.c.Devices) * s.At.Sub(t.lastIdleAt).Seconds()
	}
	t.lastIdleAt = s.At
	t.c.Class = ClassIdle
	if s.MemoryMiB >= p.MemoryMiB || s.Processes > 0 {
		t.c.Class = ClassIdleHeld
	}
}

// climb moves an idle allocation up the ladder: observe → suspect when the
// window is complete (the grace starts, due = suspect + grace) → warned at
// due − notice → reclaim at the first sample at or after due. The
// warning always comes first: the reclaim is never asked in the warning's
// own period, however short the notice.
func (t *tracker) climb(now time.Time, p Policy) Transition {
	switch t.c.Step {
	case StepObserve, StepExempt:
		t.c.Step = StepObserve
		if now.Sub(t.c.IdleSince) < p.Window {
			return None
		}
		t.c.Step, t.c.SuspectAt, t.c.DueAt = StepSuspect, now, now.Add(p.Grace)
		t.c.WarnAt = t.c.DueAt.Add(-p.Notice)
		if t.c.WarnAt.Before(now) {
			t.c.WarnAt = now
		}
		if t.warn(now) {
			return Warn
		}
		return Suspect
	case StepSuspect:
		if t.warn(now) {
			return Warn
		}
	case StepWarned:
		if t.gap { // the grace restarts after unseen time, and so does the notice
			t.c.DueAt = now.Add(p.Grace)
		}
		if !now.Before(t.c.DueAt) && now.After(t.c.WarnedAt) && p.Action != ActionWarn && !t.c.WarnOnly() {
			t.c.Step = StepReclaim
			return Reclaim
		}
	case StepReclaim:
		if t.gap { // unseen time while waiting: back to warned, a whole grace again
			t.c.Step, t.c.DueAt = StepWarned, now.Add(p.Grace)
			return None
		}
		return Reclaim // not yet acted on: ask again
	}
	return None
}

// warn moves a suspect to warned when its warning is due.
func (t *tracker) warn(now time.Time) bool {
	if now.Before(t.c.WarnAt) {
		return false
	}
	t.c.Step, t.c.WarnedAt = StepWarned, now
	return true
}
