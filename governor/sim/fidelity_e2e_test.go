//go:build e2e

package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/sim/fleet"
	"github.com/allot-sh/allot/governor/sim/workload"
	"github.com/allot-sh/allot/internal/testcluster"
)

// Fidelity replay sizes: 4 clients × 8 inventory GPUs, 150 jobs of 3
// tenants submitted over 75 s, each running 2–16 s of toy-trainer steps.
const (
	fidNodes  = 4
	fidJobs   = 150
	fidSpan   = 75 * time.Second
	fidStep   = 500 * time.Millisecond
	fidMinDur = 2 * time.Second
	fidMaxDur = 16 * time.Second
	fidLoad   = 1.5
	// fidStarvedLoad is the starvation replay's offered load: enough
	// that queue heads wait past the starvation timeout.
	fidStarvedLoad = 3.0
	fidTimeout     = 4 * time.Minute
	// fidStartDelay is the real stack's time from admission to a running
	// task on this harness (Nomad's evaluation and the client starting
	// the ckpt driver's task): 0.12–0.72 s, median 0.26 s, over the 76
	// jobs the simulator admitted at submission in a preemption replay.
	fidStartDelay = 260 * time.Millisecond
	// fidStopDelay is its time from the governor's decision to requeue a
	// job until Nomad's client reports the allocation terminal (the ckpt
	// driver asks the trainer to checkpoint, it exits): median 0.25 s,
	// middle half 0.20–0.29 s, over 58 preemptions of a replay (the
	// allocations' last update in allocs.json of ALLOT_FIDELITY_DUMP
	// against the journal's decision times).
	fidStopDelay = 250 * time.Millisecond
)

const fidInventory = `
seed           = %q
driver_version = "550.54.15"
cuda_version   = "12.4"
gpu "H200" {
  count              = 8
  memory_mib         = 143771
  compute_capability = "9.0"
  topology           = "nvswitch"
}
`

// fidCluster is the simulator's cluster file for the same fleet and
// tenants (quotas as fractions of the 32 GPUs).
const fidCluster = `
node "h200" {
  inventory  = %q
  count      = %d
  pool       = "gpu"
  cpu_mhz    = 1000000
  memory_mib = 1000000
}
tenant "fa" {
  load      = 0.5
  gpu_quota = 0.375
  gpu_limit = 0.75
}
tenant "fb" {
  load      = 0.3
  gpu_quota = 0.375
  gpu_limit = 0.75
}
tenant "fc" {
  load      = 0.2
  gpu_quota = 0.25
  gpu_limit = 0.5
}
`

// TestE2E_SimFidelity replays one trace on the real stack (Nomad 1.6.1,
// nomad-device-accel, nomad-driver-ckpt running the toy trainer, the
// governor with a 1 s cycle, preemption off) and in the simulator
// (policy allot, the same engine configuration), and compares the order
// in which jobs start (Kendall τ), each job's wait and the utilization.
func TestE2E_SimFidelity(t *testing.T) {
	fidelity(t, fidCase{load: fidLoad, config: "disable_preemption = true\n"})
}

// TestE2E_SimFidelityStarvation is the replay at twice the load with a
// starvation timeout of 3 s on both sides (10 min by default, which the 75-s trace
// never reaches): queue heads that do not fit hold their pool's
// reservation with backfill, and starved heads of tenants below their
// nominal hold their cohort's lending (docs/governor.md, Admission). It
// asserts the simulator saw such cycles, so the comparison covers them.
// Preemption stays off on both sides (TestE2E_SimFidelityPreemption
// replays it).
func TestE2E_SimFidelityStarvation(t *testing.T) {
	fidelity(t, fidCase{load: fidStarvedLoad, starved: true,
		config: "disable_preemption = true\nstarvation_timeout = \"3s\"\n"})
}

// TestE2E_SimFidelityPreemption is the starvation replay with preemption
// on, its waits scaled to the trace (a job is a victim after 2 s of run,
// a requeued job backs off 1-2 s): reclaim, fairness, queue-order and
// move preemptions requeue jobs on both sides. The toy trainer saves a
// checkpoint when the ckpt driver asks before the stop and resumes from
// it, which the simulator models with CheckpointOnStop. It asserts that
// both sides preempted and compares how often and which jobs, beside
// the start order, waits and utilization.
func TestE2E_SimFidelityPreemption(t *testing.T) {
	fidelity(t, fidCase{load: fidStarvedLoad, starved: true, preempts: true,
		config: "starvation_timeout = \"3s\"\nfair_min_run = \"2s\"\nmove_min_run = \"2s\"\n" +
			"backoff_base = \"1s\"\nbackoff_cap = \"2s\"\n"})
}

// fidCase is one replay: the trace's offered load and the governor's
// configuration (after cycle_interval = "1s"), which the simulator's
// engine reads too; starved and preempts assert that the replay reached
// the starvation timeout and preempted.
type fidCase struct {
	load              float64
	config            string
	starved, preempts bool
}

// fidelity runs the replay of fc on both sides and compares them.
func fidelity(t *testing.T, fc fidCase) {
	dir := t.TempDir()
	inv := filepath.Join(dir, "node.hcl")
	must.NoError(t, os.WriteFile(inv, []byte(fmt.Sprintf(fidInventory, "fid")), 0o644))
	spec, err := fleet.Parse(filepath.Join(dir, "cluster.hcl"), []byte(fmt.Sprintf(fidCluster, inv, fidNodes)))
	must.NoError(t, err)
	jobs := fidelityTrace(t, spec, fc.load)
	govCfg := filepath.Join(dir, "governor.hcl")
	must.NoError(t, os.WriteFile(govCfg, []byte("cycle_interval = \"1s\"\n"+fc.config), 0o644))

	c, gov, trainer := fidelityStack(t, dir, inv, govCfg)
	client := proxyClient(t, gov)
	observed := replay(t, c, client, trainer, jobs)

	opts := DefaultOptions()
	// The governor cycles on every change, at least 200 ms apart (its
	// MinGap; cycle_interval = "1s" is the longest gap): the simulator's
	// CycleInterval is that shortest gap.
	opts.CycleInterval, opts.SampleInterval = 200*time.Millisecond, time.Second
	cfg := config.Default()
	must.NoError(t, cfg.LoadFile(govCfg))
	opts.Engine = cfg.Engine()
	opts.CheckpointOnStop = true // the toy trainer saves on the driver's request
	opts.StartDelay, opts.StopDelay = fidStartDelay, fidStopDelay
	waiting := 0 // cycles with a reservation or a borrow hold
	simCauses := map[string]int{}
	dump := os.Getenv("ALLOT_FIDELITY_DUMP")
	var simLog []string
	opts.OnCycle = func(_ *engine.Snapshot, p *engine.Plan) {
		if len(p.Reservations) > 0 || len(p.BorrowHolds) > 0 {
			waiting++
		}
		for _, d := range p.Decisions {
			if d.Action == engine.Requeue && d.Preemptor != "" {
				simCauses[d.Cause]++
				if dump == "" {
					continue
				}
				simLog = append(simLog, fmt.Sprintf("%v %s/%s by %s cause %s: %s", p.Now.Sub(epoch).Round(time.Millisecond), d.Namespace, d.JobID, d.Preemptor, d.Cause, d.Reason))
			}
		}
	}
	simJobs := make([]*workload.Job, len(jobs))
	for i, j := range jobs {
		cp := *j
		cp.Submit = observed[j.ID].Submit // as actually submitted
		simJobs[i] = &cp
	}
	res, err := Run(spec, simJobs, Allot, opts)
	must.NoError(t, err)
	var obs []Observed
	for _, o := range observed {
		obs = append(obs, o)
	}
	f := Compare(obs, res)
	t.Logf("fidelity: %d jobs, Kendall τ %.3f, |wait real − sim| mean %.1f s p50 %.1f s p95 %.1f s max %.1f s, mean wait real %.1f s sim %.1f s, utilization real %.3f sim %.3f; %d simulated cycles with a reservation or borrow hold",
		f.Jobs, f.Tau, f.WaitDiff.Mean.Seconds(), f.WaitDiff.P50.Seconds(), f.WaitDiff.P95.Seconds(), f.WaitDiff.Max.Seconds(),
		f.MeanWaitReal.Seconds(), f.MeanWaitSim.Seconds(), f.UtilReal, f.UtilSim, waiting)
	t.Logf("preemptions: real %d (by cause %v) of %d jobs, simulated %d (by cause %v) of %d jobs, %d jobs preempted on both; %d simulated submissions admitted at once by the proxy",
		f.PreemptionsReal, preemptionsByCause(t, gov), f.PreemptedReal, f.PreemptionsSim, simCauses, f.PreemptedSim, f.PreemptedBoth, res.ProxyAdmits)
	if dump != "" {
		dumpFidelity(t, dump, c, gov, simLog, observed, res)
	}
	must.Eq(t, len(jobs), f.Jobs, must.Sprint("every job started on both"))
	must.Greater(t, 0.7, f.Tau, must.Sprint("start orders agree"))
	must.Less(t, 10*time.Second, f.WaitDiff.Mean, must.Sprint("waits agree on average"))
	must.Less(t, 0.15, math.Abs(f.UtilReal-f.UtilSim), must.Sprint("utilization agrees"))
	if fc.starved {
		must.Positive(t, waiting, must.Sprint("the replay reaches the starvation timeout"))
	}
	if !fc.preempts {
		must.Zero(t, f.PreemptionsReal+f.PreemptionsSim, must.Sprint("preemption is off"))
		return
	}
	must.Positive(t, f.PreemptionsReal, must.Sprint("the real stack preempts"))
	must.Positive(t, f.PreemptionsSim, must.Sprint("the simulator preempts"))
	must.Positive(t, f.PreemptedBoth, must.Sprint("some of the same jobs are preempted on both"))
}

// dumpFidelity writes both sides of a replay into dir for a closer look
// (ALLOT_FIDELITY_DUMP=DIR): the governor's decisions journal
// (real.json), the simulator's preemptions (sim.txt), each job's times
// on the real stack (observed.json) and in the simulator (simjobs.json),
// and every allocation with its task events (allocs.json: when stopped
// ones were killed and finished).
func dumpFidelity(t *testing.T, dir string, c *testcluster.Cluster, gov string, simLog []string, observed map[string]Observed, res *Result) {
	resp, err := http.Get(gov + "/allot/v1/decisions")
	must.NoError(t, err)
	journal, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	must.NoError(t, err)
	obs, err := json.Marshal(observed)
	must.NoError(t, err)
	sim, err := json.Marshal(res.Jobs)
	must.NoError(t, err)
	stubs, _, err := c.API.Allocations().List(&api.QueryOptions{Namespace: "*"})
	must.NoError(t, err)
	allocs, err := json.Marshal(stubs)
	must.NoError(t, err)
	for name, b := range map[string][]byte{"real.json": journal, "sim.txt": []byte(strings.Join(simLog, "\n")),
		"observed.json": obs, "simjobs.json": sim, "allocs.json": allocs} {
		must.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
}

// preemptionsByCause reads allot_preemptions_total from the governor.
func preemptionsByCause(t *testing.T, addr string) map[string]int {
	m, err := testcluster.Metrics(addr)
	must.NoError(t, err)
	out := map[string]int{}
	for series, v := range m {
		if rest, ok := strings.CutPrefix(series, `allot_preemptions_total{reason="`); ok {
			out[strings.TrimSuffix(rest, `"}`)] = int(v)
		}
	}
	return out
}

// fidelityTrace draws the workload (1–8 GPUs, one allocation each) and
// scales its run times into [fidMinDur, fidMaxDur] in whole steps so the
// offered load is about load of the 32 GPUs over fidSpan.
func fidelityTrace(t *testing.T, spec *fleet.Spec, load float64) []*workload.Job {
	p := workload.Params{Seed: 1, Jobs: fidJobs, Span: fidSpan, MaxGPUs: 8, Pool: "gpu"}
	for _, tn := range spec.Tenants {
		p.Tenants = append(p.Tenants, workload.TenantLoad{Name: tn.Name, Share: tn.Load})
	}
	jobs, err := workload.Generate(p)
	must.NoError(t, err)
	var work float64
	for _, j := range jobs {
		work += float64(j.GPUs()) * j.Duration.Seconds()
	}
	f := load * float64(spec.GPUs()) * fidSpan.Seconds() / work
	for _, j := range jobs {
		d := time.Duration(float64(j.Duration) * f).Round(fidStep)
		if d < fidMinDur {
			d = fidMinDur
		}
		if d > fidMaxDur {
			d = fidMaxDur
		}
		j.Duration, j.Checkpoint = d, 0
	}
	return jobs
}

// fidelityStack starts the real stack: fidNodes clients with the ckpt
// driver (unisolated) and 8 inventory GPUs each, the three tenants, and
// the governor with the configuration file govCfg.
func fidelityStack(t *testing.T, dir, inv, govCfg string) (*testcluster.Cluster, string, string) {
	root := t.TempDir()
	var clients []testcluster.ClientSpec
	for i := 0; i < fidNodes; i++ {
		clients = append(clients, testcluster.ClientSpec{Name: fmt.Sprintf("fid-%d", i), NodePool: "gpu",
			PluginConfig: map[string]string{
				"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv),
				"nomad-driver-ckpt":  fmt.Sprintf("checkpoint_root = %q\n%s", root, testcluster.CkptUnisolated),
			},
			Ready: testcluster.HasDevices("nvidia/gpu/H200", 8)})
	}
	c := testcluster.New(t, testcluster.Options{Plugins: []string{"nomad-device-accel", "nomad-driver-ckpt"}, Clients: clients})
	for ns, meta := range map[string]map[string]string{
		"fa": {"allot.quota.gpu": "12", "allot.limit.gpu": "24"},
		"fb": {"allot.quota.gpu": "12", "allot.limit.gpu": "24"},
		"fc": {"allot.quota.gpu": "8", "allot.limit.gpu": "16"},
	} {
		_, err := c.API.Namespaces().Register(&api.Namespace{Name: ns, Meta: meta}, nil)
		must.NoError(t, err)
	}
	g := c.StartGovernor("-config", govCfg)
	return c, g.Addr, testcluster.BuildToyTrainer(t, dir)
}

// replay submits the jobs through the governor's proxy at their trace
// offsets and waits until every one finished; it returns when each job
// was submitted, started (its task started) and ended, as offsets from
// the first submission.
func replay(t *testing.T, c *testcluster.Cluster, client *api.Client, trainer string, jobs []*workload.Job) map[string]Observed {
	start := time.Now()
	submitted := map[string]time.Duration{}
	for _, j := range jobs {
		if wait := time.Until(start.Add(j.Submit)); wait > 0 {
			<-time.After(wait) // pacing the trace, not waiting for state
		}
		submitted[j.ID] = time.Since(start)
		_, _, err := client.Jobs().Register(fidelityJob(j, trainer), nil)
		must.NoError(t, err, must.Sprintf("submitting %s", j.ID))
	}
	out := map[string]Observed{}
	c.Eventually(fidTimeout, "every replayed job finished", func() error {
		for _, j := range jobs {
			if _, done := out[j.ID]; done {
				continue
			}
			o, err := observe(c, j, start)
			if err != nil {
				return err
			}
			o.Submit = submitted[j.ID]
			out[j.ID] = o
		}
		return nil
	})
	return out
}

// observe reads job j's allocations: when its task first started and
// when the allocation that finished it ended, and how often a started
// allocation was stopped by the governor (a preemption requeues the job:
// Nomad stops its allocations, desired status "stop").
func observe(c *testcluster.Cluster, j *workload.Job, start time.Time) (Observed, error) {
	allocs, _, err := c.API.Jobs().Allocations(j.ID, true, &api.QueryOptions{Namespace: j.Tenant})
	if err != nil {
		return Observed{}, err
	}
	sort.Slice(allocs, func(a, b int) bool { return allocs[a].CreateIndex < allocs[b].CreateIndex })
	o := Observed{ID: j.ID, GPUs: j.GPUs()}
	started, done := false, false
	for _, a := range allocs {
		ts := a.TaskStates["train"]
		if ts == nil || ts.StartedAt.IsZero() {
			continue
		}
		if !started {
			o.Start, started = ts.StartedAt.Sub(start), true
		}
		if !ts.FinishedAt.IsZero() {
			o.Ran += ts.FinishedAt.Sub(ts.StartedAt)
		}
		switch {
		case a.DesiredStatus == api.AllocDesiredStatusStop:
			o.Preemptions++
		case a.ClientStatus == api.AllocClientStatusComplete:
			o.End, done = ts.FinishedAt.Sub(start), true
		}
	}
	if !done {
		return Observed{}, fmt.Errorf("job %s/%s has not finished (%d allocations)", j.Tenant, j.ID, len(allocs))
	}
	return o, nil
}

// fidelityJob is j as a ckpt-driver batch job running the toy trainer for
// its duration in fidStep steps.
func fidelityJob(j *workload.Job, trainer string) *api.Job {
	g := j.Groups[0]
	job := api.NewBatchJob(j.ID, j.ID, "global", 50)
	job.Namespace, job.NodePool = &j.Tenant, pointer("gpu")
	job.Meta = map[string]string{"allot.class": j.Class}
	steps := int64(j.Duration / fidStep)
	task := api.NewTask("train", "ckpt").SetConfig("command", trainer).
		SetConfig("args", []string{"-steps", fmt.Sprint(steps), "-step-time", fidStep.String()})
	cpu, mem := 50, 32
	task.Resources = &api.Resources{CPU: &cpu, MemoryMB: &mem,
		Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: pointer(uint64(g.GPUs))}}}
	tg := api.NewTaskGroup("g", 1).AddTask(task)
	tg.RestartPolicy = &api.RestartPolicy{Attempts: pointer(0), Mode: pointer("fail")}
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: pointer(0), Unlimited: pointer(false)}
	job.AddTaskGroup(tg)
	return job
}
