//go:build e2e

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/internal/testcluster"
)

// pendingJob is a small batch job for node pool "nowhere", which has no
// nodes: Nomad accepts it and blocks its evaluation, the governor queues it
// (it cannot fit). Both paths do one registration and one evaluation.
func pendingJob(ns, id string) *api.Job {
	j := api.NewBatchJob(id, id, "global", 50)
	j.Namespace = &ns
	j.NodePool = pointerTo("nowhere")
	task := api.NewTask("t", "raw_exec").SetConfig("command", "/bin/true")
	task.Resources = &api.Resources{CPU: pointerTo(10), MemoryMB: pointerTo(16)}
	j.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	return j
}

// saveProfile stores a 5s CPU profile of the governor in path.
func saveProfile(addr, path string) {
	resp, err := http.Get(addr + "/debug/pprof/profile?seconds=5")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	_ = os.WriteFile(path, data, 0o644)
}

func pointerTo[T any](v T) *T { return &v }

// BenchmarkE2E_Submit compares job registrations per second straight to
// Nomad with registrations through the governor's proxy (with admission).
func BenchmarkE2E_Submit(b *testing.B) {
	c := testcluster.New(b, testcluster.Options{Clients: []testcluster.ClientSpec{{Name: "c1"}}})
	if _, err := c.API.NodePools().Register(&api.NodePool{Name: "nowhere"}, nil); err != nil {
		b.Fatal(err)
	}
	for _, ns := range []string{"plain", "governed"} {
		meta := map[string]string{}
		if ns == "governed" {
			meta["allot.quota.cpu"] = "1000000"
		}
		if _, err := c.API.Namespaces().Register(&api.Namespace{Name: ns, Meta: meta}, nil); err != nil {
			b.Fatal(err)
		}
	}
	cfgFile := filepath.Join(b.TempDir(), "governor.hcl")
	if err := os.WriteFile(cfgFile, []byte("enable_debug = true\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	g := c.StartGovernor("-config", cfgFile)
	if prof := os.Getenv("ALLOT_BENCH_PROFILE"); prof != "" {
		go saveProfile(g.Addr, prof)
	}
	for _, path := range []struct{ name, addr, ns string }{{"direct", c.Addr(), "plain"}, {"proxy", g.Addr, "governed"}} {
		b.Run(path.name, func(b *testing.B) {
			cfg := api.DefaultConfig()
			cfg.Address = path.addr
			cfg.HttpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			client, err := api.NewClient(cfg)
			if err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprintf("%s-%d", path.name, n.Add(1))
					if _, _, err := client.Jobs().Register(pendingJob(path.ns, id), &api.WriteOptions{Namespace: path.ns}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkE2E_TimeToRunning measures, per iteration, the time from a
// running job being stopped to the next held job running in its place.
func BenchmarkE2E_TimeToRunning(b *testing.B) {
	e := newBenchEnv(b)
	var took []time.Duration
	for i := 0; i < b.N; i++ {
		blocker, waiter := fmt.Sprintf("blocker-%d", i), fmt.Sprintf("waiter-%d", i)
		e.submit(blocker, 4)
		e.c.WaitForAlloc("team-a", blocker, time.Minute, testcluster.ClientStatus(api.AllocClientStatusRunning))
		e.submit(waiter, 4)
		start := time.Now()
		if _, _, err := e.c.API.Jobs().Deregister(blocker, true, &api.WriteOptions{Namespace: "team-a"}); err != nil {
			b.Fatal(err)
		}
		e.c.WaitForAlloc("team-a", waiter, time.Minute, testcluster.ClientStatus(api.AllocClientStatusRunning))
		took = append(took, time.Since(start))
		if _, _, err := e.c.API.Jobs().Deregister(waiter, true, &api.WriteOptions{Namespace: "team-a"}); err != nil {
			b.Fatal(err)
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(took[(len(took)*99)/100].Milliseconds()), "p99-ms")
}
