//go:build e2e

package ha

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/allot-sh/allot/internal/testcluster"
)

// benchConfigs are the settings the failover benchmarks measure: Consul's
// and Allot's defaults, the same with a 2 s check, and the fast setting
// (2 s check, 5 s lock-delay) that README.md argues is safe.
var benchConfigs = []struct {
	name string
	s    settings
}{
	{"default", settings{ttl: DefaultSessionTTL, lockDelay: DefaultLockDelay}},
	{"check_ttl=2s", settings{ttl: DefaultSessionTTL, lockDelay: DefaultLockDelay, checkTTL: 2 * time.Second}},
	{"check_ttl=2s,lock_delay=5s", settings{ttl: DefaultSessionTTL, lockDelay: 5 * time.Second, checkTTL: 2 * time.Second}},
}

// BenchmarkE2E_HAElector measures, against a real Consul dev agent, the
// time from a leader's failure to the standby publishing that it leads:
// "graceful" is Resign (SIGTERM), "crash" stops the leader's campaign with
// no resignation (kill -9: its session is left to expire). One op is one
// trial with a fresh pair of electors on a key of its own. Graceful trials
// run one after the other; the b.N crash trials of a run go concurrently
// (seconds each; they share nothing but the agent, and each one's time is
// set by Consul's timers, not by CPU). Metrics are the
// distribution over the trials, e.g.
//
//	go test -tags e2e -run '^$' -bench 'HAElector' -benchtime 10x ./governor/ha/
func BenchmarkE2E_HAElector(b *testing.B) {
	consul := testcluster.StartConsul(b)
	for _, kind := range []string{"graceful", "crash"} {
		for _, cfg := range benchConfigs {
			kind, cfg := kind, cfg
			b.Run(kind+"/"+cfg.name, func(b *testing.B) {
				ds := make([]time.Duration, b.N)
				errs := make([]error, b.N)
				var wg sync.WaitGroup
				for i := 0; i < b.N; i++ {
					i := i
					trial := func() {
						key := fmt.Sprintf("allot/bench/%s/%s/%d-%d/leader", kind, cfg.name, b.N, i)
						ds[i], errs[i] = failoverTrial(consul.Addr(), key, cfg.s, kind)
					}
					if kind == "graceful" { // milliseconds each: one after the other
						trial()
						continue
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						trial()
					}()
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					b.Fatal(err)
				}
				reportDistribution(b, ds)
			})
		}
	}
}

// failoverTrial runs two electors until one leads, fails it (kind) and
// returns the time until the other published that it leads.
func failoverTrial(addr, key string, s settings, kind string) (time.Duration, error) {
	var cs [2]*benchCandidate
	for i, id := range []string{"a", "b"} {
		c, err := newBenchCandidate(addr, key, id, s)
		if err != nil {
			return 0, err
		}
		defer c.close()
		cs[i] = c
	}
	leader, standby, err := benchLeader(cs, 30*time.Second)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	switch kind {
	case "graceful":
		if err := leader.e.Resign(context.Background()); err != nil {
			return 0, err
		}
	case "crash":
		leader.stop()
	}
	select {
	case at := <-standby.leads:
		return at.Sub(start), nil
	case <-time.After(crashBound(s) + 10*time.Second):
		return 0, fmt.Errorf("%s %s: no failover within %s", kind, key, crashBound(s)+10*time.Second)
	}
}

// benchCandidate is an elector whose first leading status is timed.
type benchCandidate struct {
	e     *Elector
	stop  context.CancelFunc
	done  chan struct{}
	leads chan time.Time // receives when the elector first publishes that it leads
}

func newBenchCandidate(addr, key, id string, s settings) (*benchCandidate, error) {
	e, err := New(Config{Address: addr, Key: key, MemberID: id, SessionTTL: s.ttl, LockDelay: s.lockDelay,
		CheckTTL: s.checkTTL}, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &benchCandidate{e: e, stop: cancel, done: make(chan struct{}), leads: make(chan time.Time, 1)}
	go func() {
		defer close(c.done)
		_ = e.Run(ctx)
	}()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case st := <-e.Changes():
				if st.Leading {
					c.leads <- time.Now()
					return
				}
			}
		}
	}()
	return c, nil
}

// close stops the elector and removes what it left in Consul.
func (c *benchCandidate) close() {
	c.stop()
	<-c.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.e.Resign(ctx)
}

// benchLeader waits until one of cs leads and the other knows it; the
// leader's first leading status is consumed.
func benchLeader(cs [2]*benchCandidate, timeout time.Duration) (leader, standby *benchCandidate, err error) {
	deadline := time.After(timeout)
	select {
	case <-cs[0].leads:
		leader, standby = cs[0], cs[1]
	case <-cs[1].leads:
		leader, standby = cs[1], cs[0]
	case <-deadline:
		return nil, nil, errors.New("no leader elected")
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for standby.e.Status().Leader != leader.e.Self() {
		select {
		case <-deadline:
			return nil, nil, errors.New("the standby never learned the leader")
		case <-tick.C:
		}
	}
	return leader, standby, nil
}

// reportDistribution reports min, p50, p99 and max of ds in ms.
func reportDistribution(b *testing.B, ds []time.Duration) {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(p float64) time.Duration { return s[int(p*float64(len(s)-1)+0.5)] }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(s[0]), "min-ms")
	b.ReportMetric(ms(q(0.5)), "p50-ms")
	b.ReportMetric(ms(q(0.99)), "p99-ms")
	b.ReportMetric(ms(s[len(s)-1]), "max-ms")
	b.Logf("%d trials: min %s p50 %s p99 %s max %s", len(s), s[0].Round(time.Millisecond),
		q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}
