package engine

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// Three saturating tenants with weights 1:2:1 that borrow the idle
// nominal quota of a fourth converge to GPU shares of 25/50/25 (±5%):
// freed GPUs go to the tenant with the lowest weighted dominant share.
func TestFairShareConvergesToWeights(t *testing.T) {
	ts := []*Tenant{
		mkTenant("a").Quota("gpu", 4).Weight(1).Build(),
		mkTenant("b").Quota("gpu", 4).Weight(2).Build(),
		mkTenant("c").Quota("gpu", 4).Weight(1).Build(),
		mkTenant("idle").Quota("gpu", 28).Build(),
	}
	var nodes []*Node
	for i := 0; i < 5; i++ {
		nodes = append(nodes, gpuNode(fmt.Sprintf("n%d", i), 8))
	}
	s := snap(ts, nodes, nil)
	w := newWorld(testConfig(), s)
	r := rand.New(rand.NewSource(7))
	sum := map[string]int{}
	const cycles, warmup = 600, 200
	for cycle := 0; cycle < cycles; cycle++ {
		s.Now = s.Now.Add(10 * time.Second)
		w.finish()
		for _, ns := range []string{"a", "b", "c"} {
			for queued(s, ns) < 20 {
				w.seq++
				j := mkJob(ns, fmt.Sprintf("j%d", w.seq)).Pool("gpu").Device("nvidia/gpu", 1).QueuedAt(s.Now).Build()
				s.Jobs = append(s.Jobs, j)
				w.ends[j.Key()] = s.Now.Add(time.Duration(60+r.Intn(240)) * time.Second)
			}
		}
		w.step()
		if cycle >= warmup {
			for ns, n := range w.usage() {
				sum[ns] += n
			}
		}
	}
	total := float64(sum["a"] + sum["b"] + sum["c"])
	shares := map[string]float64{"a": float64(sum["a"]) / total, "b": float64(sum["b"]) / total, "c": float64(sum["c"]) / total}
	t.Logf("GPU shares over cycles %d..%d: %v (cluster busy %.0f%%)", warmup, cycles, shares, 100*total/float64((cycles-warmup)*40))
	must.Between(t, 0.20, shares["a"], 0.30)
	must.Between(t, 0.45, shares["b"], 0.55)
	must.Between(t, 0.20, shares["c"], 0.30)
	must.Greater(t, 0.9, total/float64((cycles-warmup)*40), must.Sprint("the tenants saturate the cluster"))
}

func queued(s *Snapshot, ns string) int {
	n := 0
	for _, j := range s.Jobs {
		if j.Namespace == ns && j.State == Queued {
			n++
		}
	}
	return n
}
