package ha

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestLeaseDeadline(t *testing.T) {
	t0 := newFakeClock().Now()
	cases := map[string]struct {
		ttl, checkTTL, margin time.Duration
		renewAt, checkAt      time.Duration // offsets from t0; <0: never
		want                  time.Duration // offset of the deadline from t0; <0: zero time
	}{
		"ttl only":                       {ttl: 15 * time.Second, margin: time.Second, renewAt: 0, checkAt: -1, want: 14 * time.Second},
		"later renewal moves it":         {ttl: 10 * time.Second, margin: time.Second, renewAt: 5 * time.Second, checkAt: -1, want: 14 * time.Second},
		"check is the tighter bound":     {ttl: 15 * time.Second, checkTTL: 2 * time.Second, margin: 200 * time.Millisecond, renewAt: 0, checkAt: time.Second, want: 2800 * time.Millisecond},
		"stale check bounds a fresh ttl": {ttl: 10 * time.Second, checkTTL: 2 * time.Second, renewAt: 9 * time.Second, checkAt: 0, want: 2 * time.Second},
		"ttl bounds when checks go on":   {ttl: 10 * time.Second, checkTTL: 2 * time.Second, renewAt: 0, checkAt: 9 * time.Second, want: 10 * time.Second},
		"no renewal yet":                 {ttl: 10 * time.Second, renewAt: -1, checkAt: -1, want: -1},
		"check mode without check yet":   {ttl: 10 * time.Second, checkTTL: 2 * time.Second, renewAt: 0, checkAt: -1, want: -1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := newLease(newFakeClock(), tc.ttl, tc.checkTTL, tc.margin)
			if tc.renewAt >= 0 {
				l.renewed(t0.Add(tc.renewAt))
			}
			if tc.checkAt >= 0 {
				l.checked(t0.Add(tc.checkAt))
			}
			if tc.want < 0 {
				must.True(t, l.deadline().IsZero())
				must.False(t, l.valid())
				return
			}
			must.Eq(t, t0.Add(tc.want), l.deadline())
		})
	}
}

func TestLeaseIgnoresOlderRenewals(t *testing.T) {
	clock := newFakeClock()
	t0 := clock.Now()
	l := newLease(clock, 10*time.Second, 0, time.Second)
	l.renewed(t0.Add(3 * time.Second))
	l.renewed(t0.Add(time.Second)) // a slow reply to an earlier request
	must.Eq(t, t0.Add(12*time.Second), l.deadline())
}

func TestLeaseValidUntilDeadlineOnly(t *testing.T) {
	clock := newFakeClock()
	l := newLease(clock, 10*time.Second, 0, time.Second)
	l.renewed(clock.Now())
	must.True(t, l.valid())
	clock.Advance(9*time.Second - time.Nanosecond)
	must.True(t, l.valid())
	clock.Advance(time.Nanosecond) // exactly at the deadline: no longer valid
	must.False(t, l.valid())
}

func TestLeaseEndIsFinal(t *testing.T) {
	clock := newFakeClock()
	l := newLease(clock, 10*time.Second, 0, time.Second)
	l.renewed(clock.Now())
	l.end()
	l.end() // idempotent
	must.False(t, l.valid())
	l.renewed(clock.Now().Add(time.Second))
	must.False(t, l.valid())
	select {
	case <-l.done:
	default:
		t.Fatal("done not closed")
	}
}

// TestLeaseExpiredFollowsRenewals: the watchdog does not fire at the first
// deadline when a renewal moved it, and fires at the moved one.
func TestLeaseExpiredFollowsRenewals(t *testing.T) {
	clock := newFakeClock()
	l := newLease(clock, 10*time.Second, 0, time.Second)
	l.renewed(clock.Now())
	fired := make(chan time.Time, 1)
	go func() {
		if l.expired(make(chan struct{})) {
			fired <- clock.Now()
		}
	}()
	<-clock.waiting // the watchdog waits for the first deadline (t0+9s)
	clock.Advance(5 * time.Second)
	l.renewed(clock.Now()) // deadline now t0+14s
	<-clock.waiting        // re-armed for the new deadline
	clock.Advance(4 * time.Second)
	select {
	case at := <-fired:
		t.Fatalf("watchdog fired at %s, before the moved deadline", at)
	default:
	}
	clock.Advance(5 * time.Second) // t0+14s: the moved deadline
	must.Eq(t, l.deadline(), <-fired)
}

func TestLeaseExpiredStops(t *testing.T) {
	clock := newFakeClock()
	l := newLease(clock, 10*time.Second, 0, time.Second)
	l.renewed(clock.Now())
	stop := make(chan struct{})
	res := make(chan bool, 1)
	go func() { res <- l.expired(stop) }()
	close(stop)
	must.False(t, <-res)
}

func TestTermValidDeadlineDone(t *testing.T) {
	clock := newFakeClock()
	l := newLease(clock, 10*time.Second, 0, time.Second)
	l.renewed(clock.Now())
	term := Term{Epoch: 7, Start: clock.Now(), lease: l}
	must.True(t, term.Valid())
	must.Eq(t, clock.Now().Add(9*time.Second), term.Deadline())
	l.end()
	must.False(t, term.Valid())
	<-term.Done()

	var zero Term
	must.False(t, zero.Valid())
	must.True(t, zero.Deadline().IsZero())
	<-zero.Done()
}

func TestTermContext(t *testing.T) {
	// A real clock: context deadlines are on the real clock.
	l := newLease(realClock{}, 10*time.Second, 0, time.Second)
	l.renewed(time.Now())
	term := Term{Epoch: 1, lease: l}

	ctx, cancel := term.Context(context.Background())
	defer cancel()
	dl, ok := ctx.Deadline()
	must.True(t, ok)
	must.Eq(t, term.Deadline(), dl)
	must.NoError(t, ctx.Err())

	l.end() // the term ends: the write's context is canceled
	<-ctx.Done()
	must.ErrorIs(t, ctx.Err(), context.Canceled)

	zctx, zcancel := Term{}.Context(context.Background())
	defer zcancel()
	<-zctx.Done() // the zero term's context is over at once
}

// TestRemainingUsesTheWallClockToo: with both readings the monotonic
// one counts; a time known only by its wall reading (as after a suspend,
// when only the wall clock moved) is compared by wall, and a wall clock
// 20 s ahead ends the lease.
func TestRemainingUsesTheWallClockToo(t *testing.T) {
	now := time.Now() // carries a monotonic reading
	d := now.Add(9 * time.Second)
	must.Eq(t, 9*time.Second, remaining(now, d))
	must.Eq(t, 9*time.Second, remaining(now.Round(0), d))
	must.Negative(t, remaining(now.Round(0).Add(20*time.Second), d))
}
