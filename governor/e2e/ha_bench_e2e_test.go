//go:build e2e

package e2e

import (
	"sort"
	"testing"
	"time"
)

// BenchmarkE2E_HAFailover measures failovers through the governors: one
// iteration is one trial of TestE2E_HAFailover (jobs streaming in through
// the standby, every invariant checked), and the metrics are the
// distribution over the iterations of the time from the failure to the
// standby reporting itself leader, and to the new term's first write
// reaching Nomad. Settings come from HA_SESSION_TTL, HA_LOCK_DELAY and
// HA_CHECK_TTL (defaults 10s, 1s, 2s; "0" for no check), e.g.
//
//	HA_SESSION_TTL=15s HA_LOCK_DELAY=15s HA_CHECK_TTL=0 \
//	  go test -tags e2e -run '^$' -bench 'HAFailover/kill' -benchtime 5x ./governor/e2e/
func BenchmarkE2E_HAFailover(b *testing.B) {
	for _, kind := range []string{"graceful", "kill"} {
		b.Run(kind, func(b *testing.B) {
			e := newHAEnv(b)
			var lead, write []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := e.trial(kind)
				lead, write = append(lead, r.failover), append(write, r.firstWrite)
			}
			b.StopTimer()
			e.checkWriteLog()
			report(b, "lead", lead)
			report(b, "write", write)
			b.Logf("%s: leading %s; first write %s", kind, distribution(lead), distribution(write))
		})
	}
}

// report adds p50, p99 and max of ds (in ms) to the benchmark's metrics.
func report(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(s[int(0.5*float64(len(s)-1)+0.5)]), name+"-p50-ms")
	b.ReportMetric(ms(s[int(0.99*float64(len(s)-1)+0.5)]), name+"-p99-ms")
	b.ReportMetric(ms(s[len(s)-1]), name+"-max-ms")
	b.ReportMetric(0, "ns/op")
}
