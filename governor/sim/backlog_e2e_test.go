//go:build e2e

package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/internal/proc"
	"github.com/allot-sh/allot/internal/testcluster"
)

// backlog is how many queued jobs the governor holds before admissions
// are timed.
const backlog = 5000

// BenchmarkE2E_Backlog measures the real stack the simulator models: a
// Nomad 1.6.1 cluster (two clients whose nomad-device-accel reads the demo
// inventory) behind allot-governor. It fills the governor's queue with
// 5,000 jobs submitted through the proxy (8 at a time; their node pool has
// no nodes, so they stay queued), then times b.N more submissions one by
// one: admission latency under the backlog. Reported: fill rate
// (jobs/s), latency p50/p95 (ms), governor CPU seconds during the fill and
// its resident memory at the end (MiB). Run with -benchtime 200x.
func BenchmarkE2E_Backlog(b *testing.B) {
	inv, err := filepath.Abs("../../device-plugin/inventory/examples/dev-node.hcl")
	if err != nil {
		b.Fatal(err)
	}
	pc := map[string]string{"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv)}
	c := testcluster.New(b, testcluster.Options{Plugins: []string{"nomad-device-accel"},
		Clients: []testcluster.ClientSpec{{Name: "gpu-1", PluginConfig: pc}, {Name: "gpu-2", PluginConfig: pc}}})
	if _, err := c.API.NodePools().Register(&api.NodePool{Name: "nowhere"}, nil); err != nil {
		b.Fatal(err)
	}
	ns := &api.Namespace{Name: "team", Meta: map[string]string{"allot.quota.gpu": "8", "allot.limit.gpu": "16"}}
	if _, err := c.API.Namespaces().Register(ns, nil); err != nil {
		b.Fatal(err)
	}
	g := c.StartGovernor()
	pid := g.PID()
	client := proxyClient(b, g.Addr)

	cpu0, start := procCPU(b, pid), time.Now()
	fill(b, client, backlog)
	fillWall, fillCPU := time.Since(start), procCPU(b, pid)-cpu0
	last := fmt.Sprintf("q-%05d", backlog-1)
	c.Eventually(2*time.Minute, "the backlog is queued", func() error {
		j, _, err := client.Jobs().Info(last, &api.QueryOptions{Namespace: "team"})
		if err != nil {
			return err
		}
		if j.Stop == nil || !*j.Stop || j.Meta["allot.state"] != "queued" {
			return fmt.Errorf("job %s not held yet", last)
		}
		return nil
	})

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, _, err := client.Jobs().Register(gpuJob(fmt.Sprintf("t-%05d", i)), nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(x, y int) bool { return lat[x] < lat[y] })
	b.ReportMetric(float64(backlog)/fillWall.Seconds(), "fill-jobs/s")
	b.ReportMetric(fillCPU.Seconds(), "governor-fill-cpu-s")
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*95/100]), "p95-ms")
	b.ReportMetric(rssMiB(b, pid), "governor-rss-MiB")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// gpuJob is a one-GPU batch job for node pool "nowhere": the governor
// queues it because nothing can fit it.
func gpuJob(id string) *api.Job {
	ns, pool := "team", "nowhere"
	j := api.NewBatchJob(id, id, "global", 50)
	j.Namespace, j.NodePool = &ns, &pool
	task := api.NewTask("t", "raw_exec").SetConfig("command", "/bin/true")
	cpu, mem := 100, 64
	task.Resources = &api.Resources{CPU: &cpu, MemoryMB: &mem,
		Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: pointer(uint64(1))}}}
	j.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	return j
}

func pointer[T any](v T) *T { return &v }

// fill registers n jobs with 8 workers.
func fill(b *testing.B, client *api.Client, n int) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if _, _, err := client.Jobs().Register(gpuJob(fmt.Sprintf("q-%05d", i)), nil); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func proxyClient(b testing.TB, addr string) *api.Client {
	cfg := api.DefaultConfig()
	cfg.Address = addr
	cfg.HttpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	client, err := api.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// procCPU is the CPU time process pid has used so far.
func procCPU(b *testing.B, pid int) time.Duration {
	d, err := proc.CPUTime(pid)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// rssMiB is process pid's resident memory in MiB.
func rssMiB(b *testing.B, pid int) float64 {
	mib, err := proc.RSSMiB(pid)
	if err != nil {
		b.Fatal(err)
	}
	return mib
}

// throughputJobs is how many jobs each side of BenchmarkE2E_ProxyThroughput
// registers (ALLOT_THROUGHPUT_JOBS overrides it).
const throughputJobs = 400

// envInt is the positive integer in environment variable name, else def.
func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want a non-negative integer", name, s)
	}
	return n
}

// BenchmarkE2E_ProxyThroughput compares submissions through the governor's
// proxy (governed namespace "team": authenticated, judged, admitted or
// held) with the same registrations sent straight to Nomad (namespace
// "plain", not governed), 8 at a time, into a node pool without nodes.
// Reported: jobs/s each way and their ratio (proxy ÷ direct). Run with
// -benchtime 1x (direct first), or 2x and up: iterations alternate which
// side goes first and the rates count all of them (the cycle figures are
// the last proxy side's). Also reported: the governor's CPU time per proxied job
// (process CPU over the proxy side) and each side's registration round
// trips (p50, p99, max in ms: whether a slow side is slow throughout or
// held up by a few requests). ALLOT_THROUGHPUT_JOBS sets the jobs
// per side (400);
// ALLOT_THROUGHPUT_BACKLOG fills the governor's queue first with that many
// held jobs through the proxy (0), waiting until the governor's queue
// lists them all, so the timed submissions meet a long queue.
// ALLOT_THROUGHPUT_SETTLE (any value) waits before each side until Nomad
// has no pending evaluation: without it the proxy side runs while Nomad
// still schedules the direct side's jobs (each gets a blocked evaluation;
// before bab0e85 each also moved the governor's store generation and
// so rebuilt its admission base).
func BenchmarkE2E_ProxyThroughput(b *testing.B) {
	inv, err := filepath.Abs("../../device-plugin/inventory/examples/dev-node.hcl")
	if err != nil {
		b.Fatal(err)
	}
	pc := map[string]string{"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv)}
	c := testcluster.New(b, testcluster.Options{Plugins: []string{"nomad-device-accel"},
		Clients: []testcluster.ClientSpec{{Name: "gpu-1", PluginConfig: pc}}})
	if _, err := c.API.NodePools().Register(&api.NodePool{Name: "nowhere"}, nil); err != nil {
		b.Fatal(err)
	}
	for _, ns := range []*api.Namespace{{Name: "team", Meta: map[string]string{"allot.quota.gpu": "8", "allot.limit.gpu": "16"}}, {Name: "plain"}} {
		if _, err := c.API.Namespaces().Register(ns, nil); err != nil {
			b.Fatal(err)
		}
	}
	g := c.StartGovernor(throughputArgs(b)...)
	proxy := proxyClient(b, g.Addr)
	direct := proxyClient(b, c.Addr())
	jobs := envInt(b, "ALLOT_THROUGHPUT_JOBS", throughputJobs)
	if n := envInt(b, "ALLOT_THROUGHPUT_BACKLOG", 0); n > 0 {
		fillNS(b, proxy, "team", "q", n)
		waitQueued(b, c, g.Addr, n)
	}
	settle := os.Getenv("ALLOT_THROUGHPUT_SETTLE") != ""
	b.ResetTimer()
	// Iterations alternate which side goes first (direct first on even
	// ones), so that with -benchtime 2x or more neither side always meets
	// Nomad busy with the other's evaluations; rates are over all
	// iterations.
	var directWall, proxyWall, cpu time.Duration
	var cyc cycleStats
	var directTook, proxyTook latencies
	for i := 0; i < b.N; i++ {
		viaDirect := func() {
			if settle {
				waitEvaluated(b, c)
			}
			start := time.Now()
			directTook = append(directTook, fillNS(b, direct, "plain", fmt.Sprintf("d%d", i), jobs)...)
			directWall += time.Since(start)
		}
		viaProxy := func() {
			if settle {
				waitEvaluated(b, c)
			}
			cpu0, cyc0 := procCPU(b, g.PID()), readCycleStats(b, g.Addr)
			start := time.Now()
			proxyTook = append(proxyTook, fillNS(b, proxy, "team", fmt.Sprintf("p%d", i), jobs)...)
			wall := time.Since(start)
			proxyWall += wall
			cpu += procCPU(b, g.PID()) - cpu0
			cyc = readCycleStats(b, g.Addr).since(cyc0, wall)
		}
		if i%2 == 0 {
			viaDirect()
			viaProxy()
		} else {
			viaProxy()
			viaDirect()
		}
	}
	total := float64(jobs * b.N)
	viaNomad, viaProxy := total/directWall.Seconds(), total/proxyWall.Seconds()
	ratio := viaProxy / viaNomad
	b.StopTimer()
	b.ReportMetric(viaNomad, "direct-jobs/s")
	b.ReportMetric(viaProxy, "proxy-jobs/s")
	b.ReportMetric(ratio, "proxy/direct")
	b.ReportMetric(ms(cpu)/total, "governor-cpu-ms/job")
	b.ReportMetric(cyc.perSecond, "cycles/s")
	b.ReportMetric(cyc.busy, "cycle-busy")
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p99", 0.99}, {"max", 1}} {
		b.ReportMetric(directTook.quantile(q.q), "direct-"+q.name+"-ms")
		b.ReportMetric(proxyTook.quantile(q.q), "proxy-"+q.name+"-ms")
	}
	if path := os.Getenv("ALLOT_PROXY_CPUPROFILE"); path != "" {
		profileProxy(b, g.Addr, proxy, "profile?seconds=10", path)
	}
	if path := os.Getenv("ALLOT_PROXY_TRACE"); path != "" {
		profileProxy(b, g.Addr, proxy, "trace?seconds=5", path)
	}
}

// throughputArgs are the governor's extra arguments: ALLOT_GOVERNOR_LOG_LEVEL
// overrides testcluster's debug log level; ALLOT_PROXY_CPUPROFILE and
// ALLOT_PROXY_TRACE turn on the governor's profiler (enable_debug).
func throughputArgs(b *testing.B) []string {
	var args []string
	if lvl := os.Getenv("ALLOT_GOVERNOR_LOG_LEVEL"); lvl != "" {
		args = append(args, "-log-level", lvl)
	}
	if os.Getenv("ALLOT_PROXY_CPUPROFILE") != "" || os.Getenv("ALLOT_PROXY_TRACE") != "" {
		cfg := filepath.Join(b.TempDir(), "debug.hcl")
		if err := os.WriteFile(cfg, []byte("enable_debug = true\n"), 0o600); err != nil {
			b.Fatal(err)
		}
		args = append(args, "-config", cfg)
	}
	return args
}

// profileProxy takes a profile of the governor (what, a /debug/pprof/
// endpoint with its query: a CPU profile or an execution trace) while
// submissions keep coming through the proxy (not timed), into path.
func profileProxy(b *testing.B, addr string, proxy *api.Client, what, path string) {
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(addr + "/debug/pprof/" + what)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("profile: %s", resp.Status)
			return
		}
		f, err := os.Create(path)
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	for round := 0; ; round++ {
		select {
		case err := <-done:
			if err != nil {
				b.Fatal(err)
			}
			return
		default:
		}
		fillNS(b, proxy, "team", fmt.Sprintf("prof%d", round), 80)
	}
}

// fillNS registers n jobs named prefix-i in namespace ns with 8 workers.
func fillNS(b *testing.B, client *api.Client, ns, prefix string, n int) latencies {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	took := make(latencies, n)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				j := gpuJob(fmt.Sprintf("%s-%05d", prefix, i))
				j.Namespace = &ns
				start := time.Now()
				if _, _, err := client.Jobs().Register(j, nil); err != nil {
					errs <- err
					return
				}
				took[i] = time.Since(start)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return took
}

// latencies are the registrations' round trips, one per job.
type latencies []time.Duration

// quantile is the q-quantile (nearest rank) in milliseconds.
func (l latencies) quantile(q float64) float64 {
	s := append(latencies(nil), l...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	if len(s) == 0 {
		return 0
	}
	i := int(q*float64(len(s))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return ms(s[i])
}

// waitQueued waits until the governor's queue (GET /allot/v1/queue, a
// cycle's plan with the proxy's holds since) lists at least n jobs.
func waitQueued(b *testing.B, c *testcluster.Cluster, addr string, n int) {
	c.Eventually(5*time.Minute, "the backlog is queued", func() error {
		resp, err := http.Get(addr + "/allot/v1/queue")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var q struct{ Total int }
		if err := json.NewDecoder(resp.Body).Decode(&q); err != nil {
			return err
		}
		if q.Total < n {
			return fmt.Errorf("%d of %d jobs queued", q.Total, n)
		}
		return nil
	})
}

// cycleStats is allot_cycle_seconds read from the governor's /metrics:
// how many cycles decided and for how long in all (seconds); since turns
// two readings into cycles per second and the part of the wall time the
// loop spent deciding (cycle-busy: 0.1 is a tenth of a core).
type cycleStats struct {
	count, sum      float64
	perSecond, busy float64
}

func (c cycleStats) since(before cycleStats, wall time.Duration) cycleStats {
	c.perSecond = (c.count - before.count) / wall.Seconds()
	c.busy = (c.sum - before.sum) / wall.Seconds()
	return c
}

func readCycleStats(b *testing.B, addr string) cycleStats {
	b.Helper()
	m, err := testcluster.Metrics(addr)
	if err != nil {
		b.Fatal(err)
	}
	return cycleStats{count: m["allot_cycle_seconds_count"], sum: m["allot_cycle_seconds_sum"]}
}

// waitEvaluated waits until Nomad holds no pending evaluation (every job
// registered so far has been through its scheduler).
func waitEvaluated(b *testing.B, c *testcluster.Cluster) {
	c.Eventually(5*time.Minute, "Nomad evaluated every job", func() error {
		evals, _, err := c.API.Evaluations().List(&api.QueryOptions{Namespace: "*", Filter: `Status == "pending"`, PerPage: 1})
		if err != nil {
			return err
		}
		if len(evals) > 0 {
			return fmt.Errorf("evaluation %s of %s/%s pending", evals[0].ID, evals[0].Namespace, evals[0].JobID)
		}
		return nil
	})
}
