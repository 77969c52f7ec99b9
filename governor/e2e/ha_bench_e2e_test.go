//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
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
//
// HA_BACKGROUND_JOBS=<n> first registers n stopped jobs straight to Nomad
// (ungoverned namespace, no allocations), so that a handover is measured
// with a cluster whose Nomad keeps many jobs (a full relisting reads each
// one).
func BenchmarkE2E_HAFailover(b *testing.B) {
	for _, kind := range []string{"graceful", "kill"} {
		b.Run(kind, func(b *testing.B) {
			e := newHAEnv(b)
			e.registerBackground(haBackgroundJobs(b))
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

// haBackgroundJobs is $HA_BACKGROUND_JOBS (0 when unset).
func haBackgroundJobs(t testing.TB) int {
	v := os.Getenv("HA_BACKGROUND_JOBS")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	must.NoError(t, err, must.Sprint("HA_BACKGROUND_JOBS"))
	return n
}

// registerBackground registers n stopped batch jobs in the default
// namespace straight to Nomad (8 at a time) and waits until both
// governors are settled again.
func (e *haEnv) registerBackground(n int) {
	e.t.Helper()
	if n <= 0 {
		return
	}
	ids := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				id := fmt.Sprintf("background-%d", i)
				j := api.NewBatchJob(id, id, "global", 50)
				j.Stop = pointerTo(true)
				task := api.NewTask("t", "raw_exec").SetConfig("command", "/bin/true")
				task.Resources = &api.Resources{CPU: pointerTo(20), MemoryMB: pointerTo(16)}
				j.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
				_, _, err := e.c.API.Jobs().Register(j, nil)
				errs <- err
			}
		}()
	}
	for i := 0; i < n; i++ {
		ids <- i
	}
	close(ids)
	wg.Wait()
	close(errs)
	for err := range errs {
		must.NoError(e.t, err)
	}
	e.c.Eventually(time.Minute, "every background job listed by Nomad", func() error {
		stubs, _, err := e.c.API.Jobs().List(&api.QueryOptions{Namespace: api.DefaultNamespace})
		if err != nil {
			return err
		}
		if len(stubs) < n {
			return fmt.Errorf("%d of %d jobs", len(stubs), n)
		}
		return nil
	})
	e.roles()
}
