package engine

import (
	"fmt"
	"math/rand"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchSnapshot builds a busy cluster: nodes of 8 H200 with about 70 % of
// them running one admitted job each (random class, checkpoint age), and pending jobs of a few common shapes spread over the
// tenants, whose nominal quotas together match the cluster.
func benchSnapshot(pending, nodes, tenants int) *Snapshot {
	r := rand.New(rand.NewSource(1))
	gpusPerTenant := int64(nodes*8/tenants) + 1
	var ts []*Tenant
	for i := 0; i < tenants; i++ {
		ts = append(ts, mkTenant(fmt.Sprintf("t%03d", i)).Cohort(fmt.Sprintf("c%d", i%5)).
			Quota("gpu", gpusPerTenant).Limit("gpu", 2*gpusPerTenant).Quota("cpu", int64(nodes)*64000/int64(tenants)).Build())
	}
	var ns []*Node
	var allocs []*Alloc
	var running []*Job
	for i := 0; i < nodes; i++ {
		n := mkNode(fmt.Sprintf("n%05d", i)).Pool("gpu").CPU(64000).Mem(512*1024).Devices(h200, 8, "memory", "143771 MiB").Build()
		ns = append(ns, n)
		used := r.Intn(9)
		if r.Intn(10) < 7 && used > 0 {
			ns := ts[r.Intn(tenants)].Namespace
			a := alloc(ns, fmt.Sprintf("run%d", i), "g", n.ID, int64(used)*4000, int64(used)*32768, map[string]int{h200: used})
			a.Started, a.StartedAt, a.LastCheckpoint = true, t0.Add(-time.Hour), t0.Add(-time.Duration(r.Intn(3600))*time.Second)
			allocs = append(allocs, a)
			running = append(running, mkJob(ns, a.JobID).State(Admitted).Pool("gpu").Class([]string{"high", "standard", "low"}[r.Intn(3)]).
				CPU(int64(used)*4000).Mem(int64(used)*32768).Device("nvidia/gpu", used).Build())
		}
	}
	shapes := []int{1, 1, 2, 4, 8}
	var jobs []*Job
	for i := 0; i < pending; i++ {
		g := shapes[r.Intn(len(shapes))]
		jobs = append(jobs, mkJob(ts[r.Intn(tenants)].Namespace, fmt.Sprintf("job-%d", i)).Pool("gpu").
			Class([]string{"high", "standard", "low"}[r.Intn(3)]).QueuedAt(t0.Add(time.Duration(i)*time.Second)).
			Count(1+r.Intn(2)).CPU(int64(g)*4000).Mem(int64(g)*32768).Device("nvidia/gpu", g).Build())
	}
	s := snap(ts, ns, allocs, append(running, jobs...)...)
	s.Now = t0.Add(time.Duration(pending) * time.Second)
	return s
}

// BenchmarkDecide measures a cycle without preemption (issue 5's
// target); BenchmarkDecidePreemption the same snapshots with it.
func BenchmarkDecide(b *testing.B) {
	cfg := testConfig()
	cfg.DisablePreemption = true
	benchDecide(b, cfg, []int{1000, 10000, 50000}, []int{100, 1000, 5000})
}

// BenchmarkDecidePreemption is BenchmarkDecide with preemption on:
// tenants below their nominal quota reclaim from those above.
func BenchmarkDecidePreemption(b *testing.B) {
	benchDecide(b, testConfig(), []int{1000, 10000}, []int{100, 1000})
}

// BenchmarkDecideEntitlement is BenchmarkDecidePreemption under the
// entitlement fair-share rule with any class (fair_share_rule =
// "entitlement", fair_share_classes = "any"): each cohort's entitlement
// is computed once per cycle from every job's demand.
func BenchmarkDecideEntitlement(b *testing.B) {
	cfg := testConfig()
	cfg.FairShareRule, cfg.FairClasses = FairRuleEntitlement, FairClassesAny
	benchDecide(b, cfg, []int{1000, 10000}, []int{100, 1000})
}

// BenchmarkDecideAuto is BenchmarkDecidePreemption under the governor's
// default fair-share rule, auto, with every other job saving a
// checkpoint when stopped (ckpt driver): victims that save are judged by
// entitlement, so each cohort's entitlement is computed as under
// BenchmarkDecideEntitlement.
func BenchmarkDecideAuto(b *testing.B) {
	cfg := testConfig()
	cfg.FairShareRule = FairRuleAuto
	half := func(s *Snapshot) {
		i := 0
		markSaving(s, func(*Job) bool { i++; return i%2 == 1 })
	}
	benchDecideWith(b, cfg, []int{1000, 10000}, []int{100, 1000}, []int{10, 100}, half)
}

// BenchmarkDecideShareOrder is BenchmarkDecidePreemption under each
// queue order (queue_order = "class", the default, and "share") up to
// 1,000 tenants: under the share order every preemptible class of every
// tenant is one tier of the fair walk, whose heap holds a tenant each.
func BenchmarkDecideShareOrder(b *testing.B) {
	for _, order := range []string{QueueOrderClass, QueueOrderShare} {
		cfg := testConfig()
		cfg.QueueOrder = order
		b.Run("order="+order, func(b *testing.B) {
			benchDecideWith(b, cfg, []int{10000}, []int{100, 1000}, []int{10, 100, 1000}, nil)
		})
	}
}

// BenchmarkDecideStopping is BenchmarkDecidePreemption (10k pending, 1k
// nodes, 100 tenants) with every tenth running allocation stopping (a
// preemption Nomad has not finished: it holds its node, not its tenant's
// usage) and learned run times for jobs without allot.max-runtime
// (Config.Runtimes, a map lookup per job as the governor's learner).
func BenchmarkDecideStopping(b *testing.B) {
	cfg := testConfig()
	learned := map[string]time.Duration{}
	var mu sync.Mutex
	cfg.Runtimes = func(j *Job) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return learned[j.Namespace+"\x00"+j.ID]
	}
	benchDecideWith(b, cfg, []int{10000}, []int{1000}, []int{100}, func(s *Snapshot) {
		for i, a := range s.Allocs {
			if i%10 == 0 {
				a.Live, a.Stopping = false, true
			}
			learned[a.Namespace+"\x00"+a.JobID] = 2 * time.Hour
		}
	})
}

func benchDecide(b *testing.B, cfg Config, pendings, nodeCounts []int) {
	benchDecideWith(b, cfg, pendings, nodeCounts, []int{10, 100}, nil)
}

// benchDecideWith runs Decide on benchSnapshot of every size, changed by
// edit (when set) before the runs.
func benchDecideWith(b *testing.B, cfg Config, pendings, nodeCounts, tenantCounts []int, edit func(*Snapshot)) {
	for _, pending := range pendings {
		for _, nodes := range nodeCounts {
			for _, tenants := range tenantCounts {
				s := benchSnapshot(pending, nodes, tenants)
				if edit != nil {
					edit(s)
				}
				b.Run(fmt.Sprintf("pending=%d/nodes=%d/tenants=%d", pending, nodes, tenants), func(b *testing.B) {
					b.ReportAllocs()
					var p *Plan
					cpu0 := cpuTime()
					for i := 0; i < b.N; i++ {
						p = Decide(cfg, s)
					}
					// CPU time per cycle: on a shared machine wall time
					// also counts the time other processes hold the cores.
					b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
					admitted, victims := 0, 0
					for _, d := range p.Decisions {
						if d.Action == Admit {
							admitted++
						} else if d.Action == Requeue {
							victims++
						}
					}
					b.ReportMetric(float64(admitted), "admitted")
					b.ReportMetric(float64(victims), "victims")
				})
			}
		}
	}
}
