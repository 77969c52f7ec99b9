//go:build e2e

package e2e

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

	"github.com/allot-sh/allot/internal/proc"
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
func saveProfile(addr, path string) error {
	resp, err := http.Get(addr + "/debug/pprof/profile?seconds=5")
	if err != nil {
		return fmt.Errorf("profiling the governor: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the profile: %w", err)
	}
	return os.WriteFile(path, data, 0o644)
}

func pointerTo[T any](v T) *T { return &v }

// submitPath is one way to register jobs: straight to Nomad in an
// ungoverned namespace, or through the governor's proxy in a governed one.
type submitPath struct {
	name, ns string
	client   *api.Client
	// jobs and busy add up the measured registrations and their wall time.
	jobs int
	busy time.Duration
	// govCPU and nomadCPU add up the CPU the governor and the Nomad server
	// spent from the start of a chunk until its evaluations were processed.
	govCPU, nomadCPU time.Duration
}

// submitEnv is one cluster with a governor, for one run of
// BenchmarkE2E_Submit.
type submitEnv struct {
	c              *testcluster.Cluster
	g              *testcluster.Governor
	govPID, srvPID int
	direct, proxy  *submitPath
	// pass goes through the proxy to an ungoverned namespace: the same
	// Nomad work as direct plus the governor's HTTP hop, no admission.
	pass *submitPath
	seq  atomic.Int64
}

// submitWorkers is how many goroutines register jobs at once on each path.
const submitWorkers = 8

// submitChunk is how many jobs one timed chunk registers.
const submitChunk = 250

func newSubmitEnv(b *testing.B) *submitEnv {
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
	e := &submitEnv{c: c, g: g,
		govPID: g.PID(),
		srvPID: c.Server.PID(),
		direct: &submitPath{name: "direct", ns: "plain", client: apiClient(b, c.Addr())},
		proxy:  &submitPath{name: "proxy", ns: "governed", client: apiClient(b, g.Addr)},
		pass:   &submitPath{name: "pass", ns: "plain", client: apiClient(b, g.Addr)}}
	// Warm-up: connections, the governor's first cycles, Nomad's caches.
	for i := 0; i < 2; i++ {
		for _, p := range e.paths() {
			e.chunk(b, p, submitChunk)
		}
	}
	if prof := os.Getenv("ALLOT_BENCH_PROFILE"); prof != "" {
		e.profileProxy(b, prof)
	}
	return e
}

func apiClient(b *testing.B, addr string) *api.Client {
	cfg := api.DefaultConfig()
	cfg.Address = addr
	cfg.HttpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	client, err := api.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// chunk registers n jobs on path p with submitWorkers goroutines and waits
// until Nomad has processed each worker's last evaluation, so that no
// chunk pays for the one before. It returns the wall time of the
// registrations and the CPU the governor and the Nomad server spent from
// the start until the evaluations were done.
func (e *submitEnv) chunk(b *testing.B, p *submitPath, n int) (time.Duration, time.Duration, time.Duration) {
	gov0, srv0 := cpuTime(b, e.govPID), cpuTime(b, e.srvPID)
	var left atomic.Int64
	left.Store(int64(n))
	evals := make([]string, submitWorkers)
	errs := make(chan error, submitWorkers)
	start := time.Now()
	for w := 0; w < submitWorkers; w++ {
		go func(w int) {
			for left.Add(-1) >= 0 {
				id := fmt.Sprintf("%s-%d", p.name, e.seq.Add(1))
				resp, _, err := p.client.Jobs().Register(pendingJob(p.ns, id), &api.WriteOptions{Namespace: p.ns})
				if err != nil {
					errs <- fmt.Errorf("registering %s: %w", id, err)
					return
				}
				evals[w] = resp.EvalID
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < submitWorkers; w++ {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	for _, id := range evals {
		e.waitEval(b, p.ns, id)
	}
	return took, cpuTime(b, e.govPID) - gov0, cpuTime(b, e.srvPID) - srv0
}

// waitEval polls until evaluation id is no longer pending.
func (e *submitEnv) waitEval(b *testing.B, ns, id string) {
	if id == "" {
		return
	}
	e.c.Eventually(time.Minute, "evaluation "+id+" processed", func() error {
		ev, _, err := e.c.API.Evaluations().Info(id, &api.QueryOptions{Namespace: ns})
		if err != nil {
			return err
		}
		if ev.Status == api.EvalStatusPending {
			return fmt.Errorf("evaluation %s is %s", id, ev.Status)
		}
		return nil
	})
}

func (e *submitEnv) paths() []*submitPath { return []*submitPath{e.direct, e.proxy, e.pass} }

// run measures n jobs on each path in chunks, rotating which path goes
// first (direct, proxy, pass; proxy, pass, direct; …) so all see the same
// cluster state and the same background load on average.
func (e *submitEnv) run(b *testing.B, n int) {
	paths := e.paths()
	for _, p := range paths {
		p.jobs, p.busy, p.govCPU, p.nomadCPU = 0, 0, 0, 0
	}
	for round, done := 0, 0; done < n; round, done = round+1, done+submitChunk {
		size := submitChunk
		if n-done < size {
			size = n - done
		}
		for i := range paths {
			p := paths[(round+i)%len(paths)]
			took, gov, srv := e.chunk(b, p, size)
			p.jobs, p.busy, p.govCPU, p.nomadCPU = p.jobs+size, p.busy+took, p.govCPU+gov, p.nomadCPU+srv
		}
	}
}

func (p *submitPath) rate() float64 { return float64(p.jobs) / p.busy.Seconds() }

func (p *submitPath) report(b *testing.B) {
	b.ReportMetric(p.rate(), p.name+"-jobs/s")
	b.ReportMetric(float64(p.govCPU.Microseconds())/float64(p.jobs), p.name+"-gov-cpu-us/job")
	b.ReportMetric(float64(p.nomadCPU.Microseconds())/float64(p.jobs), p.name+"-nomad-cpu-us/job")
}

// profileProxy saves a 5s CPU profile of the governor taken while jobs go
// through the proxy.
func (e *submitEnv) profileProxy(b *testing.B, path string) {
	done := make(chan error, 1)
	go func() { done <- saveProfile(e.g.Addr, path) }()
	for {
		select {
		case err := <-done:
			if err != nil {
				b.Fatal(err)
			}
			return
		default:
			e.chunk(b, e.proxy, submitChunk)
		}
	}
}

// cpuTime is the CPU time process pid has used so far.
func cpuTime(b *testing.B, pid int) time.Duration {
	d, err := proc.CPUTime(pid)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkE2E_Submit compares job registrations per second straight to
// Nomad with registrations through the governor's proxy (with admission),
// on a fresh cluster per run so that runs are independent samples (Nomad
// and the governor get slower as jobs pile up). One op is one job on each
// path. Run it with -benchtime 1000x -count 5 and take the median of
// proxy/direct-%. The jobs are queued by the governor (their node pool has
// no nodes), so Nomad does less for a proxied job (a stopped job's
// evaluation completes at once) than for a direct one (a blocked
// evaluation); pass/direct-% compares identical Nomad work with and
// without the governor's hop, and the CPU metrics show each side's cost.
func BenchmarkE2E_Submit(b *testing.B) {
	if b.N == 1 {
		// Go first calls a benchmark with b.N = 1 to size it; with
		// -benchtime Nx that call is discarded, so do not start a cluster
		// for it.
		return
	}
	e := newSubmitEnv(b)
	b.ResetTimer()
	e.run(b, b.N)
	for _, p := range e.paths() {
		p.report(b)
	}
	b.ReportMetric(100*e.proxy.rate()/e.direct.rate(), "proxy/direct-%")
	b.ReportMetric(100*e.pass.rate()/e.direct.rate(), "pass/direct-%")
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
