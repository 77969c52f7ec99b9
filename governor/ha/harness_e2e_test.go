//go:build e2e

package ha

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/tcpproxy"
)

// candidate is one elector running against Consul, as a governor would run
// it, with a log of the statuses it published (and when they arrived).
type candidate struct {
	t     testing.TB
	e     *Elector
	proxy *tcpproxy.Proxy // nil unless started behind a proxy
	stop  context.CancelFunc
	done  chan error

	mu   sync.Mutex
	seen []seenStatus
}

type seenStatus struct {
	at time.Time
	st Status
}

// settings are the elector settings of one test.
type settings struct {
	ttl, lockDelay, checkTTL time.Duration
}

func (s settings) String() string {
	return fmt.Sprintf("ttl=%s lock-delay=%s check-ttl=%s", s.ttl, s.lockDelay, s.checkTTL)
}

// testKey is a lock key of its own for each test.
func testKey(t testing.TB) string {
	r := strings.NewReplacer("/", "_", " ", "_", "#", "_")
	return "allot/e2e/" + r.Replace(t.Name()) + "/leader"
}

// startCandidate starts an elector for key on Consul at addr (through a
// tcpproxy when viaProxy) and runs it until the test ends.
func startCandidate(t testing.TB, addr, key, id string, s settings, viaProxy bool) *candidate {
	t.Helper()
	c := &candidate{t: t, done: make(chan error, 1)}
	if viaProxy {
		px, err := tcpproxy.New(addr)
		must.NoError(t, err)
		t.Cleanup(func() { _ = px.Close() })
		c.proxy, addr = px, px.Addr()
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "e2e", Level: hclog.Debug, Output: testWriter{t}})
	e, err := New(Config{Address: addr, Key: key, MemberID: id, AdvertiseURL: "http://" + id + ".invalid:4680",
		SessionTTL: s.ttl, LockDelay: s.lockDelay, CheckTTL: s.checkTTL}, logger)
	must.NoError(t, err)
	c.e = e
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	go c.record(ctx)
	go func() { c.done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-c.done
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		_ = e.Resign(rctx) // leave nothing behind in Consul
	})
	return c
}

// record keeps every status the elector publishes, with its arrival time.
func (c *candidate) record(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case st := <-c.e.Changes():
			c.mu.Lock()
			c.seen = append(c.seen, seenStatus{at: time.Now(), st: st})
			c.mu.Unlock()
		}
	}
}

// firstLeading is the arrival time of the first published status leading
// in a term other than notEpoch, and that term.
func (c *candidate) firstLeading(notEpoch uint64) (time.Time, Term, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.seen {
		if s.st.Leading && s.st.Term.Epoch != notEpoch {
			return s.at, s.st.Term, true
		}
	}
	return time.Time{}, Term{}, false
}

// kill stops the campaign as a crash would: no resignation, the session is
// left to expire in Consul.
func (c *candidate) kill() {
	c.stop()
	err := <-c.done
	must.ErrorIs(c.t, err, context.Canceled)
	c.done <- err // for the cleanup
	_, leading := c.e.Leading()
	must.False(c.t, leading)
}

// waitFor polls cond every 10ms until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %s for %s: %v", timeout, what, err)
		}
		<-tick.C
	}
}

// waitLeader waits until exactly one of cs leads and every other one knows
// it as the leader; it returns the leader's index and term.
func waitLeader(t testing.TB, timeout time.Duration, cs ...*candidate) (int, Term) {
	t.Helper()
	var idx int
	var term Term
	waitFor(t, timeout, "exactly one leader known to all", func() error {
		idx = -1
		for i, c := range cs {
			if tm, ok := c.e.Leading(); ok {
				if idx >= 0 {
					return fmt.Errorf("%s and %s both lead", cs[idx].e.Self().ID, c.e.Self().ID)
				}
				idx, term = i, tm
			}
		}
		if idx < 0 {
			return errors.New("no leader")
		}
		for _, c := range cs {
			if st := c.e.Status(); st.Leader != cs[idx].e.Self() || st.Epoch != term.Epoch {
				return fmt.Errorf("%s sees leader %q epoch %d", c.e.Self().ID, st.Leader.ID, st.Epoch)
			}
		}
		return nil
	})
	return idx, term
}

// testWriter sends log lines to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// steppedDown is the arrival time of the first published status after
// term epoch's that does not lead in it (zero if none).
func (c *candidate) steppedDown(epoch uint64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := false
	for _, s := range c.seen {
		if s.st.Leading && s.st.Term.Epoch == epoch {
			in = true
			continue
		}
		if in {
			return s.at
		}
	}
	return time.Time{}
}

// waitLeads waits until the candidate has published a leading status and
// returns its arrival time and term; since is the failure's time, for the
// message.
func (c *candidate) waitLeads(timeout time.Duration, since time.Time, what string) (time.Time, Term) {
	c.t.Helper()
	var at time.Time
	var term Term
	waitFor(c.t, timeout, what, func() error {
		var ok bool
		if at, term, ok = c.firstLeading(0); !ok {
			return fmt.Errorf("%s not leading %s after the failure", c.e.Self().ID, time.Since(since).Round(time.Millisecond))
		}
		return nil
	})
	return at, term
}

// writeLog records the writes of simulated writers: each writes (its
// epoch) every few milliseconds while its elector says it leads, as the
// governor checks Leading right before each write.
type writeLog struct {
	mu     sync.Mutex
	epochs []uint64 // in the order the writes happened
}

// write runs one writer until stop is closed.
func (l *writeLog) write(e *Elector, stop <-chan struct{}) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		l.mu.Lock() // the check and the append are one step, as a write that lands at once
		if term, ok := e.Leading(); ok {
			l.epochs = append(l.epochs, term.Epoch)
		}
		l.mu.Unlock()
	}
}

// wrote returns nil once a write of epoch was recorded.
func (l *writeLog) wrote(epoch uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.epochs {
		if e == epoch {
			return nil
		}
	}
	return fmt.Errorf("no write of epoch %d among %d writes", epoch, len(l.epochs))
}

// check returns an error for any write of an older epoch after a write of
// a newer one.
func (l *writeLog) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var max uint64
	stale := 0
	for _, e := range l.epochs {
		if e < max {
			stale++
		}
		if e > max {
			max = e
		}
	}
	if stale > 0 {
		return fmt.Errorf("%d writes of an older term after a newer term's first write (of %d)", stale, len(l.epochs))
	}
	return nil
}
