package ha

import (
	"context"
	"sync"
	"time"
)

// Clock is the time source of the lease. time.Now's values carry a
// monotonic reading, so deadlines computed from them are immune to wall
// clock steps; tests inject a fake.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// lease is how long the holder of one Consul session may act. Consul can
// invalidate the session no earlier than SessionTTL after it received the
// last renewal, and (with a check) no earlier than CheckTTL after its agent
// received the last check update. Each request's start time is before its
// arrival, so start + bound is a safe lower bound of the invalidation time
// measured on this host's monotonic clock; the lease ends margin before the
// earliest such bound.
type lease struct {
	clock    Clock
	ttl      time.Duration // session TTL
	checkTTL time.Duration // 0: no check
	margin   time.Duration

	mu        sync.Mutex
	sessBase  time.Time // start of the last successful session renewal
	checkBase time.Time // start of the last successful check update
	ended     bool
	done      chan struct{}
	moved     chan struct{} // closed and replaced whenever the deadline moves
}

func newLease(clock Clock, ttl, checkTTL, margin time.Duration) *lease {
	return &lease{clock: clock, ttl: ttl, checkTTL: checkTTL, margin: margin,
		done: make(chan struct{}), moved: make(chan struct{})}
}

// renewed records a session renewal (or creation) that started at start
// and succeeded.
func (l *lease) renewed(start time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if start.After(l.sessBase) {
		l.sessBase = start
		l.notifyLocked()
	}
}

// checked records a check update (or registration as passing) that
// started at start and succeeded.
func (l *lease) checked(start time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if start.After(l.checkBase) {
		l.checkBase = start
		l.notifyLocked()
	}
}

func (l *lease) notifyLocked() {
	close(l.moved)
	l.moved = make(chan struct{})
}

// deadline is when the lease ends; the zero time when nothing was
// renewed yet.
func (l *lease) deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadlineLocked()
}

func (l *lease) deadlineLocked() time.Time {
	if l.sessBase.IsZero() || (l.checkTTL > 0 && l.checkBase.IsZero()) {
		return time.Time{}
	}
	end := l.sessBase.Add(l.ttl)
	if l.checkTTL > 0 {
		if c := l.checkBase.Add(l.checkTTL); c.Before(end) {
			end = c
		}
	}
	return end.Add(-l.margin)
}

// valid reports whether the lease has not ended and its deadline is still
// ahead now.
func (l *lease) valid() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return false
	}
	d := l.deadlineLocked()
	return !d.IsZero() && remaining(l.clock.Now(), d) > 0
}

// remaining is the time left until deadline d, the smaller of what the
// monotonic clock and the wall clock say. The monotonic reading decides
// normally; the wall clock catches a host that was suspended (Linux's
// CLOCK_MONOTONIC, Go's monotonic clock, stands still then, the wall clock
// is set right on resume). A wall clock stepped back cannot extend the
// lease (the monotonic bound still holds); one stepped forward only ends
// it early.
func remaining(now, d time.Time) time.Duration {
	mono := d.Sub(now)
	if wall := d.Round(0).Sub(now.Round(0)); wall < mono {
		return wall
	}
	return mono
}

// end ends the lease for good (loss, fence or resignation); it is
// idempotent.
func (l *lease) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended {
		l.ended = true
		close(l.done)
	}
}

// watch returns the current deadline and a channel closed when it moves.
func (l *lease) watch() (time.Time, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadlineLocked(), l.moved
}

// expired waits until the lease's deadline passes (following every
// extension) or stop is closed; it returns true in the first case.
func (l *lease) expired(stop <-chan struct{}) bool {
	for {
		d, moved := l.watch()
		wait := remaining(l.clock.Now(), d)
		if d.IsZero() || wait <= 0 {
			return true
		}
		select {
		case <-stop:
			return false
		case <-l.done:
			return true
		case <-moved:
		case <-l.clock.After(wait):
		}
	}
}

// Term is one leader's tenure. The zero Term is no term. Its epoch is
// strictly greater than every earlier leader's; its lease follows the
// session's renewals.
type Term struct {
	// Epoch is the lock key's Consul modify index at acquisition: it
	// increases strictly from one leader to the next.
	Epoch uint64
	// Start is when this elector acquired the lock (monotonic reading).
	Start time.Time

	lease *lease
}

// Valid reports whether the term has not ended and its lease deadline is
// still ahead now. A writer checks it right before every write.
func (t Term) Valid() bool { return t.lease != nil && t.lease.valid() }

// Deadline is the lease's current end. It moves later with each renewal
// while the term lasts; it is the zero time for the zero Term.
func (t Term) Deadline() time.Time {
	if t.lease == nil {
		return time.Time{}
	}
	return t.lease.deadline()
}

// Done is closed when the term ends: the lock was lost, the lease expired
// or the elector resigned. A lease deadline passing closes it too (within
// the watchdog's wake-up), but Valid is exact.
func (t Term) Done() <-chan struct{} {
	if t.lease == nil {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return t.lease.done
}

// Context returns a context for one write of this term: canceled when the
// term ends and past the lease deadline as it stands now (a later renewal
// does not extend it). For the fence to hold the write must complete
// within LockDelay of that deadline (README.md).
func (t Term) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithDeadline(parent, t.Deadline())
	if t.lease == nil {
		return ctx, cancel
	}
	go func() {
		select {
		case <-t.lease.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
