package engine

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// linearPosition is the definition Positions must match: count the
// queued jobs that stand ahead, j itself excluded.
func linearPosition(p *Plan, cfg Config, j *Job, class string) (overall, tenant int) {
	shares := map[string]float64{}
	for _, t := range p.Tenants {
		shares[t.Namespace] = t.DominantShare
	}
	// The tier: class priority, or under QueueOrderShare one for every
	// preemptible class, after the others.
	tier := func(c Class) int {
		if cfg.QueueOrder == QueueOrderShare && c.Preemptible {
			return -1000
		}
		return c.Priority
	}
	// compare orders two keys (−tier, share, −priority): < 0 when x
	// goes first.
	compare := func(x, y [3]float64) int {
		for i := range x {
			switch {
			case x[i] < y[i]:
				return -1
			case x[i] > y[i]:
				return 1
			}
		}
		return 0
	}
	cl := cfg.Classes[class]
	key := [3]float64{-float64(tier(cl)), shares[j.Namespace], -float64(cl.Priority)}
	overall, tenant = 1, 1
	for _, v := range p.Queue {
		if v.Namespace == j.Namespace && v.JobID == j.ID {
			continue
		}
		vc := cfg.Classes[v.Class]
		vk := [3]float64{-float64(tier(vc)), shares[v.Namespace], -float64(vc.Priority)}
		if c := compare(vk, key); c < 0 || (c == 0 && !v.QueuedAt.After(j.QueuedAt)) {
			overall++
			if v.Namespace == j.Namespace {
				tenant++
			}
		}
	}
	return overall, tenant
}

// TestPropertyPositionsMatchLinear: the indexed positions equal the
// linear count on random queues, for new jobs and for queued ones, under
// both queue orders.
func TestPropertyPositionsMatchLinear(t *testing.T) {
	for _, order := range []string{QueueOrderClass, QueueOrderShare} {
		t.Run(order, func(t *testing.T) { positionsMatchLinear(t, order) })
	}
}

func positionsMatchLinear(t *testing.T, order string) {
	cfg := testConfig()
	cfg.QueueOrder = order
	classes := []string{"production", "high", "standard", "low"}
	for seed := int64(0); seed < 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		p := &Plan{}
		for i := 0; i < 3; i++ {
			p.Tenants = append(p.Tenants, TenantStatus{Tenant: *mkTenant(fmt.Sprintf("t%d", i)).Build(), DominantShare: float64(r.Intn(3)) / 2})
		}
		for i := 0; i < r.Intn(60); i++ {
			p.Queue = append(p.Queue, Verdict{Namespace: fmt.Sprintf("t%d", r.Intn(3)), JobID: fmt.Sprintf("q%d", i),
				Class: classes[r.Intn(len(classes))], QueuedAt: t0.Add(time.Duration(r.Intn(20)) * time.Minute)})
		}
		ps := NewPositions(p, cfg)
		for k := 0; k < 20; k++ {
			j := mkJob(fmt.Sprintf("t%d", r.Intn(3)), fmt.Sprintf("new%d", k)).QueuedAt(t0.Add(time.Duration(r.Intn(20)) * time.Minute)).Build()
			if len(p.Queue) > 0 && r.Intn(2) == 0 {
				v := p.Queue[r.Intn(len(p.Queue))]
				j = mkJob(v.Namespace, v.JobID).QueuedAt(v.QueuedAt).Build()
			}
			class := classes[r.Intn(len(classes))]
			o, tn := ps.Of(j, class)
			wo, wt := linearPosition(p, cfg, j, class)
			must.Eq(t, wo, o, must.Sprintf("seed %d job %s", seed, j.Key()))
			must.Eq(t, wt, tn, must.Sprintf("seed %d job %s", seed, j.Key()))
		}
	}
}
