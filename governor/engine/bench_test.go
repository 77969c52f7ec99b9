package engine

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// benchSnapshot builds a busy cluster: nodes of 8 H200 with about 70 % of
// them in use, and pending jobs of a few common shapes spread over the
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
	for i := 0; i < nodes; i++ {
		n := mkNode(fmt.Sprintf("n%05d", i)).Pool("gpu").CPU(64000).Mem(512*1024).Devices(h200, 8, "memory", "143771 MiB").Build()
		ns = append(ns, n)
		used := r.Intn(9)
		if r.Intn(10) < 7 {
			allocs = append(allocs, alloc(ts[r.Intn(tenants)].Namespace, fmt.Sprintf("run%d", i), "g", n.ID, int64(used)*4000, int64(used)*32768, map[string]int{h200: used}))
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
	s := snap(ts, ns, allocs, jobs...)
	s.Now = t0.Add(time.Duration(pending) * time.Second)
	return s
}

func BenchmarkDecide(b *testing.B) {
	for _, pending := range []int{1000, 10000, 50000} {
		for _, nodes := range []int{100, 1000, 5000} {
			for _, tenants := range []int{10, 100} {
				s := benchSnapshot(pending, nodes, tenants)
				b.Run(fmt.Sprintf("pending=%d/nodes=%d/tenants=%d", pending, nodes, tenants), func(b *testing.B) {
					b.ReportAllocs()
					var admitted int
					for i := 0; i < b.N; i++ {
						admitted = len(Decide(testConfig(), s).Decisions)
					}
					b.ReportMetric(float64(admitted), "admitted")
				})
			}
		}
	}
}
