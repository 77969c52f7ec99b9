package reconcile

import (
	"fmt"
	"testing"
	"time"

	"github.com/allot-sh/allot/governor/engine"
)

// BenchmarkProvisionalMerge: what Latest() costs after a submission (the
// merged plan is rebuilt on the first read after each proxy decision):
// a plan with 5,000 queued jobs of 20 tenants and 500 jobs the proxy held
// since, spread over the queue.
func BenchmarkProvisionalMerge(b *testing.B) {
	const queued, held = 5000, 500
	pl := &engine.Plan{Verdicts: map[string]*engine.Verdict{}}
	for i := 0; i < 20; i++ {
		pl.Tenants = append(pl.Tenants, engine.TenantStatus{Tenant: named(fmt.Sprintf("t%d", i))})
	}
	for i := 0; i < queued; i++ {
		pl.Queue = append(pl.Queue, engine.Verdict{Namespace: fmt.Sprintf("t%d", i%20), JobID: fmt.Sprint(i), Position: i + 1})
	}
	for i := range pl.Queue {
		pl.Verdicts[pl.Queue[i].Namespace+"/"+pl.Queue[i].JobID] = &pl.Queue[i]
	}
	p := provisional{entries: map[string]provEntry{}}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := 0; i < held; i++ {
		ns := fmt.Sprintf("t%d", i%20)
		p.entries[ns+"/h"+fmt.Sprint(i)] = provEntry{at: at.Add(time.Duration(i) * time.Millisecond),
			v: engine.Verdict{Namespace: ns, JobID: "h" + fmt.Sprint(i), Position: 1 + i*queued/held}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if m := p.merge(pl); len(m.Queue) != queued+held {
			b.Fatalf("merged queue has %d jobs", len(m.Queue))
		}
	}
}
