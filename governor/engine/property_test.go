package engine

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/quota"
)

// randomSnapshot builds a random but consistent cluster: allocations never
// exceed their node, jobs ask for cpu, memory and GPUs.
func randomSnapshot(r *rand.Rand, nTenants, nNodes, nJobs int) *Snapshot {
	var tenants []*Tenant
	for i := 0; i < nTenants; i++ {
		tb := mkTenant(fmt.Sprintf("t%d", i)).Cohort(fmt.Sprintf("c%d", r.Intn(2))).Weight(float64(1 + r.Intn(3)))
		q := int64(r.Intn(9))
		tb.Quota("gpu", q).Quota("cpu", int64(2000+r.Intn(8000)))
		if r.Intn(2) == 0 {
			tb.Limit("gpu", q+int64(r.Intn(5)))
		}
		if r.Intn(3) == 0 {
			tb.Lend("gpu", int64(r.Intn(int(q)+1)))
		}
		tenants = append(tenants, tb.Build())
	}
	var nodes []*Node
	var allocs []*Alloc
	for i := 0; i < nNodes; i++ {
		n := mkNode(fmt.Sprintf("n%03d", i)).Pool([]string{"gpu", "default"}[r.Intn(2)]).Devices(h200, r.Intn(9)).Build()
		n.Ready = r.Intn(10) > 0
		nodes = append(nodes, n)
		if r.Intn(2) == 0 && n.Devices[0].Healthy > 0 {
			ns := tenants[r.Intn(len(tenants))].Namespace
			g := 1 + r.Intn(n.Devices[0].Healthy)
			allocs = append(allocs, alloc(ns, fmt.Sprintf("run%d", i), "g", n.ID, 500, 512, map[string]int{h200: g}))
		}
	}
	var jobs []*Job
	for i := 0; i < nJobs; i++ {
		ns := tenants[r.Intn(len(tenants))].Namespace
		jb := mkJob(ns, fmt.Sprintf("j%d", i)).Pool([]string{"gpu", "default"}[r.Intn(2)]).
			Class([]string{"high", "standard", "low"}[r.Intn(3)]).QueuedAt(t0.Add(time.Duration(r.Intn(3600)) * time.Second)).
			Count(1 + r.Intn(3)).CPU(int64(100 + r.Intn(2000))).Mem(int64(128 + r.Intn(2048)))
		if r.Intn(4) > 0 {
			jb.Device("gpu", 1+r.Intn(4))
		}
		if r.Intn(2) == 0 {
			jb.Group("second", 1+r.Intn(2)).Device("nvidia/gpu", 1+r.Intn(2))
		}
		jobs = append(jobs, jb.Build())
	}
	s := snap(tenants, nodes, allocs, jobs...)
	s.Now = t0.Add(2 * time.Hour)
	return s
}

// independentUsage recomputes, without the engine, what each tenant holds
// before the cycle and what the plan's admissions add.
func independentUsage(s *Snapshot, p *Plan) (before, added map[string]quota.Vector) {
	before, added = map[string]quota.Vector{}, map[string]quota.Vector{}
	for ns := range s.Tenants {
		before[ns], added[ns] = quota.Vector{}, quota.Vector{}
	}
	for _, a := range s.Allocs {
		if a.Live {
			before[a.Namespace].Add(allocVector(a))
		}
	}
	for _, j := range s.Jobs {
		if _, ok := p.Decision(j.Namespace, j.ID); ok && j.State == Queued {
			added[j.Namespace].Add(requestVector(j, counts(j)))
		}
	}
	return before, added
}

func counts(j *Job) []int {
	out := make([]int, len(j.Groups))
	for i, g := range j.Groups {
		out[i] = g.Count
	}
	return out
}

func TestPropertyNeverExceedsLimitsOrCapacity(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		s := randomSnapshot(r, 1+r.Intn(5), 1+r.Intn(12), r.Intn(40))
		p := Decide(testConfig(), s)
		before, added := independentUsage(s, p)
		for ns, tn := range s.Tenants {
			for res, lim := range tn.Limit {
				if before[ns][res] <= lim {
					must.LessEq(t, lim, before[ns][res]+added[ns][res], must.Sprintf("seed %d: tenant %s %s over limit", seed, ns, res))
				}
			}
		}
		checkCohorts(t, seed, s, before, added)
		checkPhysical(t, seed, s, before, added)
	}
}

// checkCohorts: what a cohort's tenants borrow (use beyond their nominal)
// never exceeds what its members may lend, unless it already did. (A
// tenant below its nominal may still take its own nominal back while
// another borrows it: reclaiming that is preemption's job.)
func checkCohorts(t *testing.T, seed int64, s *Snapshot, before, added map[string]quota.Vector) {
	lendable, borrowedBefore, borrowedAfter := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for ns, tn := range s.Tenants {
		q := tn.Quota[quota.GPU]
		lendable[tn.Cohort] += min64(tn.LendCap(quota.GPU), q)
		borrowedBefore[tn.Cohort] += max64(0, before[ns][quota.GPU]-q)
		borrowedAfter[tn.Cohort] += max64(0, before[ns][quota.GPU]+added[ns][quota.GPU]-q)
	}
	for c := range lendable {
		if borrowedBefore[c] <= lendable[c] {
			must.LessEq(t, lendable[c], borrowedAfter[c], must.Sprintf("seed %d: cohort %s borrows more GPUs than it may lend", seed, c))
		}
	}
}

// checkPhysical: admitted GPUs plus live ones never exceed the healthy GPUs
// of ready nodes.
func checkPhysical(t *testing.T, seed int64, s *Snapshot, before, added map[string]quota.Vector) {
	var healthy, used int64
	for _, n := range s.Nodes {
		if n.Ready {
			healthy += int64(n.Devices[0].Healthy)
		}
	}
	for ns := range s.Tenants {
		used += before[ns][quota.GPU] + added[ns][quota.GPU]
	}
	var live int64
	for _, a := range s.Allocs {
		if n := findNode(s, a.NodeID); n != nil && !n.Ready {
			live += int64(a.Devices[h200])
		}
	}
	must.LessEq(t, healthy+live, used, must.Sprintf("seed %d: GPUs over physical capacity", seed))
}

func findNode(s *Snapshot, id string) *Node {
	for _, n := range s.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

func TestPropertyDeterministic(t *testing.T) {
	for seed := int64(0); seed < 100; seed++ {
		r := rand.New(rand.NewSource(seed))
		s := randomSnapshot(r, 1+r.Intn(5), 1+r.Intn(12), r.Intn(40))
		want := Decide(testConfig(), s)
		shuffled := *s
		shuffled.Jobs = append([]*Job(nil), s.Jobs...)
		shuffled.Nodes = append([]*Node(nil), s.Nodes...)
		shuffled.Allocs = append([]*Alloc(nil), s.Allocs...)
		r.Shuffle(len(shuffled.Jobs), func(i, j int) { shuffled.Jobs[i], shuffled.Jobs[j] = shuffled.Jobs[j], shuffled.Jobs[i] })
		r.Shuffle(len(shuffled.Nodes), func(i, j int) { shuffled.Nodes[i], shuffled.Nodes[j] = shuffled.Nodes[j], shuffled.Nodes[i] })
		r.Shuffle(len(shuffled.Allocs), func(i, j int) { shuffled.Allocs[i], shuffled.Allocs[j] = shuffled.Allocs[j], shuffled.Allocs[i] })
		got := Decide(testConfig(), &shuffled)
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return fmt.Sprint(a) == fmt.Sprint(b) })); diff != "" {
			t.Fatalf("seed %d: plan depends on input order (-first +second):\n%s", seed, diff)
		}
	}
}
