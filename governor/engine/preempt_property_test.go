package engine

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// fullCluster builds a random cluster whose GPUs are all in use by 1-GPU
// allocations of jobs of 1–3 allocations, with nominal quotas that sum to
// the capacity, and returns it with the tenant that is below its nominal
// quota the most.
func fullCluster(r *rand.Rand) (*Snapshot, string, int) {
	nodes, nTenants := 2+r.Intn(3), 2+r.Intn(3)
	capacity := nodes * 8
	var ts []*Tenant
	left := capacity
	for i := 0; i < nTenants; i++ {
		q := left / (nTenants - i)
		if i < nTenants-1 {
			q = 1 + r.Intn(left-(nTenants-i-1))
		}
		left -= q
		ts = append(ts, mkTenant(fmt.Sprintf("t%d", i)).Quota("gpu", int64(q)).Build())
	}
	var ns []*Node
	for i := 0; i < nodes; i++ {
		ns = append(ns, gpuNode(fmt.Sprintf("n%d", i), 8))
	}
	s := snap(ts, ns, nil)
	w := newWorld(testConfig(), s)
	for used, k := 0, 0; used < capacity; k++ {
		t := ts[r.Intn(nTenants)]
		count := 1 + r.Intn(3)
		if count > capacity-used {
			count = capacity - used
		}
		j := mkJob(t.Namespace, fmt.Sprintf("run%d", k)).State(Admitted).Class([]string{"low", "standard", "high"}[r.Intn(3)]).
			Pool("gpu").Count(count).Device("nvidia/gpu", 1).Build()
		s.Jobs = append(s.Jobs, j)
		w.place(j)
		for _, a := range s.Allocs {
			a.LastCheckpoint = t0.Add(-time.Duration(r.Intn(3600)) * time.Second)
		}
		used += count
	}
	use := w.usage()
	best, deficit := "", 0
	for _, t := range ts {
		if d := int(t.Quota["gpu"]) - use[t.Namespace]; d > deficit {
			best, deficit = t.Namespace, d
		}
	}
	return s, best, deficit
}

// A tenant below its nominal quota with a job that fits its unused
// nominal gets it admitted within one cycle plus the victims' stop time.
func TestPropertyReclaimWithinOneCycle(t *testing.T) {
	cfg := testConfig()
	cfg.BackoffBase, cfg.BackoffCap = time.Minute, 10*time.Minute
	for seed := int64(0); seed < 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		s, ns, deficit := fullCluster(r)
		if deficit == 0 {
			continue
		}
		k := 1 + r.Intn(deficit)
		job := mkJob(ns, "claim").Class([]string{"low", "standard", "high"}[r.Intn(3)]).Pool("gpu").Count(k).Device("nvidia/gpu", 1).
			QueuedAt(s.Now).Build()
		s.Jobs = append(s.Jobs, job)
		w := newWorld(cfg, s)
		p := w.step()
		if job.State == Admitted {
			continue
		}
		must.SliceNotEmpty(t, p.Preemptions, must.Sprintf("seed %d: %s", seed, findVerdict(t, p, "claim").Reason))
		s.Now = s.Now.Add(time.Second) // the victims stopped
		w.step()
		must.Eq(t, Admitted, job.State, must.Sprintf("seed %d: %v", seed, Decide(cfg, w.s).Verdicts[job.Key()]))
	}
}

// No job is ever preempted by a job it preempted, over many cycles of
// random arrivals, completions and preemptions.
func TestPropertyNoPreemptionLoops(t *testing.T) {
	cfg := testConfig()
	cfg.BackoffBase, cfg.BackoffCap = 5*time.Second, time.Minute
	preemptions := 0
	for seed := int64(0); seed < 120; seed++ {
		w, r := busyWorld(cfg, seed)
		for cycle := 0; cycle < 60; cycle++ {
			w.tick(r, 10, 120)
			preemptions += len(w.step().Preemptions)
		}
		must.SliceEmpty(t, w.preemptedBack(), must.Sprintf("seed %d", seed))
	}
	must.Greater(t, 20, preemptions, must.Sprint("the scenario must actually preempt"))
}

// bruteForceFewest finds, by trying every subset of cands, the fewest
// victims that let the sim's job run and the cheapest set of that size
// (setCost): independent of choose.
func bruteForceFewest(s *trial, cands []*victim) (int, []*victim) {
	best := -1
	var cheapest []*victim
	for mask := 1; mask < 1<<len(cands); mask++ {
		var set []*victim
		for i := range cands {
			if mask&(1<<i) != 0 {
				set = append(set, cands[i])
			}
		}
		if best >= 0 && len(set) > best || !s.feasible(set) {
			continue
		}
		if best < 0 || len(set) < best || s.costOf(set).less(s.costOf(cheapest)) {
			best, cheapest = len(set), set
		}
	}
	return best, cheapest
}

// The choice is the fewest victims a brute-force search finds, unless
// those lose more than FairLostWork: then it is a set that stops no more
// such victims, no higher class and throws away no more device time than
// the cheapest fewest (exact).
func TestPropertyFewestVictimsMatchesBruteForce(t *testing.T) {
	checked, larger := 0, 0
	for seed := int64(0); seed < 400; seed++ {
		r := rand.New(rand.NewSource(seed))
		ts := []*Tenant{mkTenant("a").Quota("gpu", 2).Build(), mkTenant("b").Quota("gpu", 14).Build()}
		ns := []*Node{gpuNode("n1", 8), gpuNode("n2", 8)}
		s := snap(ts, ns, nil)
		w := newWorld(testConfig(), s)
		for k := 0; k < 8; k++ {
			j := mkJob("a", fmt.Sprintf("v%d", k)).State(Admitted).Class("low").Pool("gpu").Count(1).Device("nvidia/gpu", 1+r.Intn(4)).Build()
			s.Jobs = append(s.Jobs, j)
			w.place(j)
		}
		// Started 4 hours ago; up to 3 hours past their checkpoints.
		for _, a := range s.Allocs {
			a.StartedAt = s.Now.Add(-4 * time.Hour)
			a.LastCheckpoint = s.Now.Add(-time.Duration(r.Intn(3*3600)) * time.Second)
		}
		pre := mkJob("b", "boss").Class("standard").Pool("gpu").Count(1+r.Intn(2)).Device("nvidia/gpu", 2+r.Intn(5)).Build()
		s.Jobs = append(s.Jobs, pre)
		cy := newCycle(testConfig(), s)
		cy.jobs = sortedJobs(s.Jobs)
		cy.prepare(cy.jobs)
		cy.buildPool()
		sm := cy.newTrial(pre, cy.accts["b"])
		cands := cy.candidates(pre, cy.accts["b"], sm)
		want, cheapest := bruteForceFewest(sm, cands)
		got := choose(sm, cands)
		if want < 0 {
			must.Nil(t, got, must.Sprintf("seed %d", seed))
			continue
		}
		checked++
		must.True(t, sm.feasible(got))
		c, f := sm.costOf(got), sm.costOf(cheapest)
		if f.stale == 0 || len(got) == want {
			must.Eq(t, want, len(got), must.Sprintf("seed %d", seed))
			must.Eq(t, f, c, must.Sprintf("seed %d", seed))
			continue
		}
		larger++
		must.Greater(t, want, len(got), must.Sprintf("seed %d", seed))
		must.True(t, c.stale <= f.stale && c.prio <= f.prio && c.lost < f.lost, must.Sprintf("seed %d: %+v against %+v", seed, c, f))
	}
	must.Greater(t, 50, checked)
	must.Greater(t, 0, larger, must.Sprint("some choices must take more victims than the fewest"))
	t.Logf("%d choices checked, %d took more victims than the fewest", checked, larger)
}
