package engine

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// typedSnapshot builds a random cluster with admitted jobs whose update
// changed their allocations' shape (they run g_old GPUs per allocation
// and now ask for g_new) and a queue of batch and system jobs.
func typedSnapshot(r *rand.Rand) *Snapshot {
	var tenants []*Tenant
	for i := 0; i < 1+r.Intn(4); i++ {
		q := int64(r.Intn(9))
		tenants = append(tenants, mkTenant(fmt.Sprintf("t%d", i)).Cohort(fmt.Sprintf("c%d", r.Intn(2))).
			Quota("gpu", q).Limit("gpu", q+int64(r.Intn(6))).Build())
	}
	pick := func() string { return tenants[r.Intn(len(tenants))].Namespace }
	var nodes []*Node
	var allocs []*Alloc
	var jobs []*Job
	for i := 0; i < 1+r.Intn(10); i++ {
		n := mkNode(fmt.Sprintf("n%02d", i)).Pool([]string{"gpu", "gpu", "default"}[r.Intn(3)]).Devices(h200, r.Intn(9)).Build()
		n.Ready = r.Intn(10) > 0
		nodes = append(nodes, n)
		if old := 1 + r.Intn(4); r.Intn(2) == 0 && n.Devices[0].Healthy >= old {
			ns, id := pick(), fmt.Sprintf("run%d", i)
			allocs = append(allocs, alloc(ns, id, "g", n.ID, 100, 128, map[string]int{h200: old}))
			jobs = append(jobs, mkJob(ns, id).State(Admitted).Pool(n.Pool).Class([]string{"high", "standard", "low"}[r.Intn(3)]).
				Device("gpu", 1+r.Intn(4)).Build())
		}
	}
	for i := 0; i < r.Intn(20); i++ {
		jb := mkJob(pick(), fmt.Sprintf("q%d", i)).Pool([]string{"gpu", "default"}[r.Intn(2)]).
			Class([]string{"high", "standard", "low"}[r.Intn(3)]).QueuedAt(t0.Add(time.Duration(r.Intn(3600)) * time.Second))
		if r.Intn(3) == 0 {
			jb.Device("gpu", 1)
			jb.j.System = true
		} else {
			jb.Count(1+r.Intn(2)).Device("gpu", 1+r.Intn(3))
		}
		jobs = append(jobs, jb.Build())
	}
	s := snap(tenants, nodes, allocs, jobs...)
	s.Now = t0.Add(2 * time.Hour)
	return s
}

// gpuFootprint is what job j runs once Nomad has applied it, computed
// without the engine: count × GPUs per allocation, or for a system job
// one allocation per ready node of its pool with a GPU.
func gpuFootprint(s *Snapshot, j *Job) int64 {
	var n int64
	for _, g := range j.Groups {
		per := int64(0)
		for _, d := range g.Devices {
			per += int64(d.Count)
		}
		count := int64(g.Count)
		if j.System {
			count = 0
			for _, node := range s.Nodes {
				if node.Ready && node.Pool == j.Pool() && node.Devices[0].Healthy >= 1 {
					count++
				}
			}
		}
		n += count * per
	}
	return n
}

func TestPropertySystemJobsAndGrowingUpdatesNeverExceedLimits(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		s := typedSnapshot(r)
		p := Decide(governSystem(), s)
		before, after := map[string]int64{}, map[string]int64{}
		for _, j := range s.Jobs {
			d, decided := p.Decision(j.Namespace, j.ID)
			switch {
			case j.State == Admitted:
				before[j.Namespace] += gpuFootprint(s, j)
				if !decided { // a requeued or stopped victim runs nothing after
					after[j.Namespace] += gpuFootprint(s, j)
				}
			case decided && d.Action == Admit:
				after[j.Namespace] += gpuFootprint(s, j)
			}
		}
		for ns, tn := range s.Tenants {
			if lim := tn.Limit["gpu"]; before[ns] <= lim {
				must.LessEq(t, lim, after[ns], must.Sprintf("seed %d: tenant %s runs %d GPUs over its limit %d (before %d)", seed, ns, after[ns], lim, before[ns]))
			}
		}
	}
}
