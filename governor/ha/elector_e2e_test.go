//go:build e2e

package ha

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
)

// Short settings for the tests (Consul's minimum TTL; a short lock-delay).
var (
	ttlOnly   = settings{ttl: 10 * time.Second, lockDelay: time.Second}
	withCheck = settings{ttl: 10 * time.Second, lockDelay: time.Second, checkTTL: 2 * time.Second}
)

// crashBound is the bound on a crash failover: 2 × session TTL +
// lock-delay + 1 s (Consul enforces a TTL lazily, up to twice over).
func crashBound(s settings) time.Duration { return 2*s.ttl + s.lockDelay + time.Second }

// TestE2E_HAElector runs pairs of electors against one real Consul dev
// agent (bin/consul), each subtest on its own lock key, in parallel.
func TestE2E_HAElector(t *testing.T) {
	consul := testcluster.StartConsul(t)
	addr := consul.Addr()

	t.Run("exactly one leads and both know it", func(t *testing.T) {
		t.Parallel()
		key := testKey(t)
		a := startCandidate(t, addr, key, "a", withCheck, false)
		b := startCandidate(t, addr, key, "b", withCheck, false)
		i, term := waitLeader(t, 10*time.Second, a, b)
		must.Positive(t, term.Epoch)
		leader := []*candidate{a, b}[i]
		must.Eq(t, leader.e.Self(), a.e.Status().Leader)

		ms, err := a.e.Members(context.Background())
		must.NoError(t, err)
		must.Eq(t, []Member{a.e.Self(), b.e.Self()}, ms)
	})

	for name, s := range map[string]settings{"ttl only": ttlOnly, "check_ttl": withCheck} {
		s := s
		t.Run("crash failover with "+name, func(t *testing.T) {
			t.Parallel()
			testCrashFailover(t, addr, s)
		})
		t.Run("partition fences the leader before the standby takes over with "+name, func(t *testing.T) {
			t.Parallel()
			testPartition(t, addr, s, false)
		})
	}

	// consul#18271's shape: the link to Consul hangs instead of failing, so
	// the leader's blocking query and renewals just wait.
	t.Run("stalled link fences the leader before the standby takes over", func(t *testing.T) {
		t.Parallel()
		testPartition(t, addr, withCheck, true)
	})

	t.Run("resign hands over at once", func(t *testing.T) {
		t.Parallel()
		key := testKey(t)
		// Default lock-delay (15 s): a clean release is not subject to it.
		s := settings{ttl: 10 * time.Second, lockDelay: DefaultLockDelay}
		a := startCandidate(t, addr, key, "a", s, false)
		b := startCandidate(t, addr, key, "b", s, false)
		i, old := waitLeader(t, 10*time.Second, a, b)
		leader, standby := []*candidate{a, b}[i], []*candidate{a, b}[1-i]

		start := time.Now()
		must.NoError(t, leader.e.Resign(context.Background()))
		_, leading := leader.e.Leading()
		must.False(t, leading)
		<-old.Done()
		at, term := standby.waitLeads(2*time.Second, start, "the standby to lead after a resignation")
		t.Logf("handover took %s (epoch %d -> %d)", at.Sub(start), old.Epoch, term.Epoch)
		must.Greater(t, old.Epoch, term.Epoch)
		must.NoError(t, <-leader.done) // Run returns nil after Resign
		leader.done <- nil

		ms, err := standby.e.Members(context.Background())
		must.NoError(t, err)
		must.Eq(t, []Member{standby.e.Self()}, ms)
	})
}

// testCrashFailover kills the leader without resigning; the standby must
// lead within the crash bound, in a newer epoch, and the dead member
// leaves the member list.
func testCrashFailover(t *testing.T, addr string, s settings) {
	key := testKey(t)
	a := startCandidate(t, addr, key, "a", s, false)
	b := startCandidate(t, addr, key, "b", s, false)
	i, old := waitLeader(t, 10*time.Second, a, b)
	leader, standby := []*candidate{a, b}[i], []*candidate{a, b}[1-i]

	killed := time.Now()
	leader.kill()
	at, term := standby.waitLeads(crashBound(s), killed, "the standby to lead after the leader died")
	t.Logf("%s: failover took %s (epoch %d -> %d)", s, at.Sub(killed), old.Epoch, term.Epoch)
	must.Greater(t, old.Epoch, term.Epoch)
	must.True(t, old.Deadline().Before(term.Start), must.Sprint("the dead leader's lease must end before the new term starts"))

	ms, err := standby.e.Members(context.Background())
	must.NoError(t, err)
	must.Eq(t, []Member{standby.e.Self()}, ms)

	// The dead member restarts under the same id (its old check is
	// critical, its member entry under lock-delay): it stands by in the
	// new term and is listed again.
	back := startCandidate(t, addr, key, leader.e.Self().ID, s, false)
	waitFor(t, 15*time.Second, "the restarted member to stand by and be listed", func() error {
		if st := back.e.Status(); st.Leading || st.Leader != standby.e.Self() || st.Epoch != term.Epoch {
			return fmt.Errorf("restarted member: leading %v, leader %q epoch %d", st.Leading, st.Leader.ID, st.Epoch)
		}
		ms, err := standby.e.Members(context.Background())
		if err != nil {
			return err
		}
		if len(ms) != 2 {
			return fmt.Errorf("members %v", ms)
		}
		return nil
	})
}

// testPartition cuts the leader off from Consul (its TCP proxy drops every
// connection, or with stall holds every byte): it must stop leading at its
// lease deadline, before the standby's term starts; healed, it comes back
// as a standby of the newer term.
func testPartition(t *testing.T, addr string, s settings, stall bool) {
	key := testKey(t)
	a := startCandidate(t, addr, key, "a", s, true)
	b := startCandidate(t, addr, key, "b", s, true)
	i, old := waitLeader(t, 10*time.Second, a, b)
	leader, standby := []*candidate{a, b}[i], []*candidate{a, b}[1-i]
	log := &writeLog{}
	stopWriters := make(chan struct{})
	for _, c := range []*candidate{a, b} {
		go log.write(c.e, stopWriters)
	}

	broke := time.Now()
	if stall {
		leader.proxy.Stall()
	} else {
		leader.proxy.Break()
	}
	_, term := standby.waitLeads(crashBound(s), broke, "the standby to lead after the partition")
	oldEnd := old.Deadline() // no renewal got through since the break: final
	t.Logf("%s stall=%v: old lease ended %s after the cut; new term started %s after it (gap %s)", s, stall,
		oldEnd.Sub(broke), term.Start.Sub(broke), term.Start.Sub(oldEnd))

	// The fence: the partitioned leader stopped leading at its deadline,
	// on its own, before the new term could start (monotonic readings).
	must.False(t, old.Valid())
	must.True(t, oldEnd.Before(term.Start), must.Sprint("old lease end must precede the new term's start"))
	stepDown := leader.steppedDown(old.Epoch)
	must.False(t, stepDown.IsZero(), must.Sprint("the old leader never published its step-down"))
	must.True(t, stepDown.Before(term.Start), must.Sprint("the old leader must step down before the new term starts"))
	must.False(t, stepDown.Before(oldEnd), must.Sprint("the old leader should lead until its lease deadline"))
	must.Greater(t, old.Epoch, term.Epoch)

	// Both electors wrote every few ms while Leading said so: no write of
	// the old term comes after the new term's first.
	waitFor(t, 5*time.Second, "a write in the new term", func() error { return log.wrote(term.Epoch) })
	close(stopWriters)
	must.NoError(t, log.check())

	leader.proxy.Heal()
	waitFor(t, crashBound(s), "the old leader to stand by in the new term", func() error {
		if _, ok := leader.e.Leading(); ok {
			return fmt.Errorf("old leader leads again")
		}
		if st := leader.e.Status(); st.Leader != standby.e.Self() || st.Epoch != term.Epoch {
			return fmt.Errorf("old leader sees leader %q epoch %d", st.Leader.ID, st.Epoch)
		}
		return nil
	})
}
