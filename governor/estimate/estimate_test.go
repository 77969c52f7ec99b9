package estimate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func job(ns, id string, gpus int) *engine.Job {
	return &engine.Job{Namespace: ns, ID: id, Groups: []engine.Group{{Name: "g", Count: 1,
		Devices: []engine.DeviceRequest{{Name: "nvidia/gpu", Count: gpus}}}}}
}

// run is a run of ns/id (devices dev) that took d and ended at end.
func run(ns, id string, version uint64, dev int64, d time.Duration, end time.Time) Run {
	return Run{Namespace: ns, JobID: id, Version: version, Devices: dev, Start: end.Add(-d), End: end}
}

func TestLearnerEstimates(t *testing.T) {
	cases := map[string]struct {
		runs []Run
		job  *engine.Job
		want time.Duration
	}{
		"fewer than five runs: unknown": {
			runs: []Run{run("ml", "train", 1, 8, time.Hour, t0), run("ml", "train", 2, 8, time.Hour, t0.Add(time.Hour))},
			job:  job("ml", "train", 8),
		},
		"90th percentile of the job name's runs": {
			runs: minutes("ml", "train", 8, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100),
			job:  job("ml", "train", 8),
			want: 90 * time.Minute,
		},
		"dispatched children share their parent's name": {
			runs: minutesIDs("ml", 4, []string{"etl/dispatch-1", "etl/dispatch-2", "etl/dispatch-3", "etl/dispatch-4", "etl/dispatch-5"}, 5, 6, 7, 8, 9),
			job:  job("ml", "etl/dispatch-99", 4),
			want: 9 * time.Minute,
		},
		"an unknown name falls back to the tenant and device count": {
			runs: minutesIDs("ml", 2, []string{"a", "b", "c", "d", "e"}, 11, 12, 13, 14, 15),
			job:  job("ml", "new", 2),
			want: 15 * time.Minute,
		},
		"another tenant's runs teach nothing": {
			runs: minutes("other", "train", 8, 1, 2, 3, 4, 5),
			job:  job("ml", "train", 8),
		},
		"another device count teaches nothing": {
			runs: minutesIDs("ml", 2, []string{"a", "b", "c", "d", "e"}, 11, 12, 13, 14, 15),
			job:  job("ml", "new", 4),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := New()
			for _, r := range tc.runs {
				l.Observe(r)
			}
			must.Eq(t, tc.want, l.Estimate(tc.job))
		})
	}
}

// TestObserveOnceInEndOrder: a run listed again (same job version) or
// older than the latest end counts once; zero-length runs are ignored.
func TestObserveOnceInEndOrder(t *testing.T) {
	l := New()
	for i := 1; i <= 4; i++ {
		l.Observe(run("ml", "x", uint64(i), 1, time.Minute, t0.Add(time.Duration(i)*time.Hour)))
	}
	l.Observe(run("ml", "x", 4, 1, 10*time.Hour, t0.Add(4*time.Hour))) // listed again at the same end
	l.Observe(run("ml", "x", 1, 1, 10*time.Hour, t0.Add(time.Hour)))   // older than the latest end
	l.Observe(Run{Namespace: "ml", JobID: "x", Version: 9, Devices: 1, Start: t0.Add(5 * time.Hour), End: t0.Add(5 * time.Hour)})
	must.Zero(t, l.Estimate(job("ml", "x", 1)), must.Sprint("still four runs"))
	l.Observe(run("ml", "x", 5, 1, 2*time.Minute, t0.Add(6*time.Hour)))
	must.Eq(t, 2*time.Minute, l.Estimate(job("ml", "x", 1)))
	must.Eq(t, t0.Add(6*time.Hour), l.Since())
}

// fakeSource lists runs by end, from since inclusive, limit at a time.
type fakeSource struct {
	runs  []Run
	calls []time.Time
	err   error
}

func (f *fakeSource) CompletedRuns(_ context.Context, since time.Time, limit int) ([]Run, error) {
	f.calls = append(f.calls, since)
	if f.err != nil {
		return nil, f.err
	}
	sort.Slice(f.runs, func(a, b int) bool { return f.runs[a].End.Before(f.runs[b].End) })
	var out []Run
	for _, r := range f.runs {
		if !r.End.Before(since) && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

// TestSyncReadsEveryBatch: more runs than a batch are read in several
// calls, each from the latest end, and counted once.
func TestSyncReadsEveryBatch(t *testing.T) {
	src := &fakeSource{}
	for i := 0; i < Batch+500; i++ {
		src.runs = append(src.runs, run("ml", fmt.Sprintf("j%d", i), 1, 1, time.Duration(1+i%10)*time.Minute, t0.Add(time.Duration(i)*time.Second)))
	}
	l := New()
	n, err := l.Sync(context.Background(), src, t0.Add(-time.Hour))
	must.NoError(t, err)
	must.Eq(t, Batch+501, n, must.Sprint("the second batch repeats the run at its since"))
	must.SliceLen(t, 2, src.calls)
	must.Eq(t, t0.Add(-time.Hour), src.calls[0])
	must.Eq(t, t0.Add(time.Duration(Batch-1)*time.Second), src.calls[1])
	must.Eq(t, 9*time.Minute, l.Estimate(job("ml", "new", 1))) // p90 of the last 50 (five each of 1..10 min)
	must.Eq(t, t0.Add(time.Duration(Batch+499)*time.Second), l.Since())

	src.err = errors.New("ledger down")
	_, err = l.Sync(context.Background(), src, time.Time{})
	must.ErrorContains(t, err, "ledger down")
}

// TestFollowUntilCancelled: Follow syncs at once and on every tick,
// reports errors, and returns when its context ends.
func TestFollowUntilCancelled(t *testing.T) {
	src := &fakeSource{err: errors.New("boom")}
	tick := make(chan time.Time)
	errs := make(chan error, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		New().Follow(ctx, src, t0, tick, func(err error) { errs <- err })
		close(done)
	}()
	must.ErrorContains(t, <-errs, "boom")
	tick <- t0
	must.ErrorContains(t, <-errs, "boom")
	cancel()
	<-done
}

func minutes(ns, id string, dev int64, ms ...int) []Run {
	var out []Run
	for i, m := range ms {
		out = append(out, run(ns, id, uint64(i+1), dev, time.Duration(m)*time.Minute, t0.Add(time.Duration(i)*time.Hour)))
	}
	return out
}

func minutesIDs(ns string, dev int64, ids []string, ms ...int) []Run {
	var out []Run
	for i, m := range ms {
		out = append(out, run(ns, ids[i], 1, dev, time.Duration(m)*time.Minute, t0.Add(time.Duration(i)*time.Hour)))
	}
	return out
}

// TestLearnerKeepsMaxNamesPerTenant: a tenant that makes up job names
// without end keeps at most MaxNames of them; the one observed least
// recently is forgotten (its job falls back to the device count), and
// other tenants' names stay.
func TestLearnerKeepsMaxNamesPerTenant(t *testing.T) {
	l := New()
	end := t0
	observe := func(ns, id string, d time.Duration, n int) {
		for i := 0; i < n; i++ {
			end = end.Add(time.Second)
			l.Observe(run(ns, id, uint64(i+1), 8, d, end))
		}
	}
	observe("other", "first", 3*time.Hour, 5)
	observe("ml", "first", 10*time.Hour, 5)
	observe("ml", "keep", 2*time.Hour, 5)
	for i := 0; i < MaxNames-2; i++ {
		observe("ml", fmt.Sprintf("n%d", i), time.Minute, 1)
	}
	must.Eq(t, 10*time.Hour, l.Estimate(job("ml", "first", 8)))

	observe("ml", "keep", 2*time.Hour, 1) // now the most recent
	observe("ml", "last", time.Minute, 1) // one name too many
	must.Eq(t, time.Minute, l.Estimate(job("ml", "first", 8)), must.Sprint("forgotten: the device count's estimate"))
	must.Eq(t, 2*time.Hour, l.Estimate(job("ml", "keep", 8)))
	must.Eq(t, 3*time.Hour, l.Estimate(job("other", "first", 8)))

	for i := 0; i < 3*MaxNames; i++ {
		observe("ml", fmt.Sprintf("more%d", i), time.Minute, 1)
	}
	must.Eq(t, MaxNames, len(l.names["ml"].at))
	must.Eq(t, MaxNames, l.names["ml"].order.Len())
	names := 0
	for k := range l.cache {
		if strings.HasPrefix(k, "ml\x00") && !strings.HasPrefix(k, "ml\x00#") {
			names++
		}
	}
	must.Eq(t, MaxNames, names)
}

// BenchmarkLearnerDistinctNames: one tenant finishes 100,000 runs, each
// under a new job name (5 runs per name would be no worse: MaxNames
// bounds names, Window runs per name). Reports the heap the learner
// retains.
func BenchmarkLearnerDistinctNames(b *testing.B) {
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		l := New()
		for n := 0; n < 100_000; n++ {
			end := t0.Add(time.Duration(n) * time.Second)
			l.Observe(run("ml", fmt.Sprintf("sweep-%d", n), 1, 8, time.Minute, end))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "retained-MiB")
		runtime.KeepAlive(l)
	}
}
