package ha

import (
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// newTestElector is an elector with a fake clock that never talks to
// Consul (for status bookkeeping only).
func newTestElector(t *testing.T, clock Clock) *Elector {
	t.Helper()
	e, err := New(Config{Address: "127.0.0.1:1", MemberID: "me", AdvertiseURL: "http://me:4680"}, hclog.NewNullLogger())
	must.NoError(t, err)
	e.clock = clock
	return e
}

func TestChangesKeepsOnlyTheNewest(t *testing.T) {
	clock := newFakeClock()
	e := newTestElector(t, clock)
	e.setStatus(func(s *Status) { s.Leader, s.Epoch = Member{ID: "x"}, 3 })
	clock.Advance(time.Second)
	e.setStatus(func(s *Status) { s.Leader, s.Epoch = Member{ID: "y"}, 5 })
	e.setStatus(func(s *Status) { s.Leader, s.Epoch = Member{ID: "y"}, 5 }) // no change: not published

	got := <-e.Changes()
	must.Eq(t, "y", got.Leader.ID)
	must.Eq(t, uint64(5), got.Epoch)
	must.Eq(t, clock.Now(), got.Since)
	select {
	case extra := <-e.Changes():
		t.Fatalf("unexpected second status %+v", extra)
	default:
	}
}

// TestStatusFencesOnTheLeaseNow: a leading status whose lease passed its
// deadline reads as not leading, before any watchdog runs.
func TestStatusFencesOnTheLeaseNow(t *testing.T) {
	clock := newFakeClock()
	e := newTestElector(t, clock)
	l := newLease(clock, 10*time.Second, 0, time.Second)
	l.renewed(clock.Now())
	term := Term{Epoch: 9, Start: clock.Now(), lease: l}
	e.setStatus(func(s *Status) { s.Leading, s.Term, s.Leader, s.Epoch = true, term, e.me, 9 })

	got, ok := e.Leading()
	must.True(t, ok)
	must.Eq(t, uint64(9), got.Epoch)

	clock.Advance(9 * time.Second) // the deadline (TTL minus margin)
	_, ok = e.Leading()
	must.False(t, ok)
	st := e.Status()
	must.False(t, st.Leading)
	must.Eq(t, Term{}, st.Term)
}

func TestNextIndex(t *testing.T) {
	must.Eq(t, uint64(12), nextIndex(10, 12))
	must.Eq(t, uint64(0), nextIndex(10, 4)) // went backwards: start over
}
