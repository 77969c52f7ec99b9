package ckpt

import (
	"errors"
	"syscall"
	"time"
)

// Clock is the time source of the stop protocol and the LATEST watcher;
// tests inject a fake one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// realClock is the system clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// process is the running task as the stop protocol sees it.
type process interface {
	// SignalGroup signals the task's whole process group.
	SignalGroup(sig syscall.Signal) error
	// Exited is closed once the task's main process has exited.
	Exited() <-chan struct{}
}

// stopPlan holds the parameters of one stop.
type stopPlan struct {
	checkpointSignal  syscall.Signal
	signalName        string
	checkpointTimeout time.Duration
	killSignal        syscall.Signal
	// killTimeout is the task's kill_timeout as Nomad passes it to StopTask,
	// already capped by the client's max_kill_timeout.
	killTimeout time.Duration
	poll        time.Duration
	// forceWait bounds the wait for the process after SIGKILL.
	forceWait time.Duration
}

// checkpointWait is how long to wait for the checkpoint. When the
// checkpoint timeout is not below kill_timeout, the wait is cut to 90% of
// kill_timeout so kill_signal still gets some time, and warn says why.
func (p stopPlan) checkpointWait() (wait time.Duration, warn bool) {
	if p.checkpointTimeout < p.killTimeout {
		return p.checkpointTimeout, false
	}
	return p.killTimeout * 9 / 10, true
}

// stopOutcome says how a stop went.
type stopOutcome struct {
	// Saved is set when LATEST changed during the stop.
	Saved bool
	// Latest is LATEST as read after the save.
	Latest Latest
	// TimedOut is set when the checkpoint wait ran out.
	TimedOut bool
	// KillSignalSent is set when kill_signal went out.
	KillSignalSent bool
	// Killed is set when SIGKILL went out.
	Killed bool
}

// stopper runs the stop protocol for one task:
//
//	checkpoint signal → wait for LATEST to change or the process to exit
//	(≤ checkpoint wait) → kill_signal → rest of kill_timeout → SIGKILL.
//
// Each state is a function returning the next one (nil ends the run).
type stopper struct {
	plan     stopPlan
	proc     process
	clock    Clock
	readLast func() (Latest, error)
	baseline *Latest
	emit     func(event)

	start        time.Time
	ckptDeadline <-chan time.Time
	killDeadline <-chan time.Time
	out          stopOutcome
}

type stateFn func() stateFn

func (s *stopper) run() stopOutcome {
	s.start = s.clock.Now()
	// The kill_timeout clock starts with the stop, as in Nomad's own drivers.
	s.killDeadline = s.clock.After(s.plan.killTimeout)
	for st := s.requestCheckpoint; st != nil; {
		st = st()
	}
	return s.out
}

func (s *stopper) requestCheckpoint() stateFn {
	wait, warn := s.plan.checkpointWait()
	if warn {
		s.emit(warningEvent("checkpoint timeout %s is not below the kill_timeout %s that Nomad allows this stop "+
			"(kill_timeout is capped by the client's max_kill_timeout); waiting only %s for the checkpoint",
			s.plan.checkpointTimeout, s.plan.killTimeout, round(wait)))
	}
	s.ckptDeadline = s.clock.After(wait)
	s.emit(requestedEvent(s.plan.signalName, wait))
	if err := s.proc.SignalGroup(s.plan.checkpointSignal); errors.Is(err, syscall.ESRCH) {
		return s.waitExit
	}
	return s.waitCheckpoint
}

func (s *stopper) waitCheckpoint() stateFn {
	for {
		select {
		case <-s.proc.Exited():
			if !s.checkSaved() {
				s.emit(exitedWithoutCheckpointEvent(s.elapsed()))
			}
			return nil
		case <-s.ckptDeadline:
			if !s.checkSaved() {
				s.out.TimedOut = true
				s.emit(timedOutEvent(s.elapsed()))
			}
			return s.sendKillSignal
		case <-s.clock.After(s.plan.poll):
			if s.checkSaved() {
				return s.sendKillSignal
			}
		}
	}
}

// checkSaved reads LATEST and reports (and records) a new checkpoint.
func (s *stopper) checkSaved() bool {
	l, err := s.readLast()
	if err != nil || (s.baseline != nil && l.Same(*s.baseline)) {
		return false
	}
	s.out.Saved, s.out.Latest = true, l
	s.emit(savedEvent(l, s.elapsed(), triggerRequested))
	return true
}

func (s *stopper) sendKillSignal() stateFn {
	select {
	case <-s.proc.Exited():
		return nil
	default:
	}
	s.out.KillSignalSent = true
	if err := s.proc.SignalGroup(s.plan.killSignal); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return s.waitExit
}

// waitExit waits for the process until kill_timeout is over. Like every
// waiting state it also wakes each poll interval, which keeps the machine
// steppable by a fake clock.
func (s *stopper) waitExit() stateFn {
	for {
		select {
		case <-s.proc.Exited():
			return nil
		case <-s.killDeadline:
			return s.forceKill
		case <-s.clock.After(s.plan.poll):
		}
	}
}

func (s *stopper) forceKill() stateFn {
	s.out.Killed = true
	_ = s.proc.SignalGroup(syscall.SIGKILL)
	deadline := s.clock.After(s.plan.forceWait)
	for {
		select {
		case <-s.proc.Exited():
			return nil
		case <-deadline:
			return nil
		case <-s.clock.After(s.plan.poll):
		}
	}
}

func (s *stopper) elapsed() time.Duration { return s.clock.Now().Sub(s.start) }
