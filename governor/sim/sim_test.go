package sim

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/sim/fleet"
	"github.com/allot-sh/allot/governor/sim/workload"
)

// smallScenario is 8 × 8 GPUs, 3 tenants, 600 jobs over two days at 120 %
// offered load, so queues form and Nomad's preemption has work to do.
func smallScenario(t *testing.T, seed int64) *Scenario {
	t.Helper()
	spec, err := fleet.Load("testdata/small.hcl")
	must.NoError(t, err)
	sc, err := Generate(spec, seed, 600, 48*time.Hour, 1.2)
	must.NoError(t, err)
	return sc
}

// run simulates sc under p, calling check after every batch of events.
func run(t *testing.T, sc *Scenario, p Policy, check func(s *sim)) *Result {
	t.Helper()
	s, err := newSim(sc.Spec, sc.Jobs, p, DefaultOptions())
	must.NoError(t, err)
	if check != nil {
		s.onSettle = func() { check(s) }
	}
	s.loop()
	return s.result()
}

// checkNodes fails when a node's free capacity leaves [0, capacity].
func checkNodes(t *testing.T, s *sim) {
	for _, nd := range s.nodes {
		if nd.freeCPU < 0 || nd.freeMem < 0 || nd.freeCPU > nd.n.CPU || nd.freeMem > nd.n.MemoryMB {
			t.Fatalf("t=%v node %s: free cpu %d mem %d out of range", s.now, nd.n.ID, nd.freeCPU, nd.freeMem)
		}
		for i, f := range nd.free {
			if f < 0 || f > nd.n.Devices[i].Healthy {
				t.Fatalf("t=%v node %s group %s: %d free of %d", s.now, nd.n.ID, nd.n.Devices[i].ID(), f, nd.n.Devices[i].Healthy)
			}
		}
	}
}

func TestConservation(t *testing.T) {
	sc := smallScenario(t, 3)
	for _, p := range Policies() {
		t.Run(string(p), func(t *testing.T) {
			r := run(t, sc, p, func(s *sim) { checkNodes(t, s) })
			must.Positive(t, r.GPUSeconds)
			must.LessEq(t, float64(r.GPUs)*r.End.Seconds(), r.GPUSeconds)
			must.LessEq(t, r.GPUs, r.MaxAllocated)
			var work float64
			finished, tooBig := 0, 0
			for _, j := range r.Jobs {
				if j.GPUs > limitOf(sc, j.Tenant) {
					tooBig++ // allot never admits it
				}
				if j.End >= 0 {
					finished++
					must.EqOp(t, 1, j.Ends, must.Sprintf("job %s ended %d times", j.ID, j.Ends))
					must.GreaterEq(t, j.Start, j.End)
					must.GreaterEq(t, j.Submit, j.Start)
					work += float64(j.GPUs) * j.Duration.Seconds()
				} else {
					must.EqOp(t, 0, j.Ends, must.Sprintf("unfinished job %s ended", j.ID))
				}
			}
			// Work done needs at least as much allocated GPU time.
			must.LessEq(t, r.GPUSeconds+1, work)
			switch p {
			case NomadFIFO:
				must.EqOp(t, len(r.Jobs), finished, must.Sprint("every job finishes"))
			case Allot:
				must.Positive(t, tooBig)
				must.Positive(t, r.ProxyAdmits, must.Sprint("submissions that fit an idle moment are admitted at once"))
				must.Less(t, len(r.Jobs), r.ProxyAdmits, must.Sprint("others wait for a cycle"))
				must.EqOp(t, len(r.Jobs)-tooBig, finished, must.Sprint("every job within its tenant's limit finishes"))
			}
		})
	}
}

func limitOf(sc *Scenario, tenant string) int {
	for _, tn := range sc.Spec.Tenants {
		if tn.Name == tenant {
			return int(tn.GPULimit * float64(sc.Spec.GPUs()))
		}
	}
	return 0
}

func TestDeterministicForASeed(t *testing.T) {
	for _, p := range Policies() {
		t.Run(string(p), func(t *testing.T) {
			a := run(t, smallScenario(t, 7), p, nil)
			b := run(t, smallScenario(t, 7), p, nil)
			must.Eq(t, "", cmp.Diff(a, b))
			c := run(t, smallScenario(t, 8), p, nil)
			must.NotEq(t, "", cmp.Diff(a, c))
		})
	}
}

func TestAllotNeverExceedsATenantsLimit(t *testing.T) {
	sc := smallScenario(t, 5)
	limits := map[string]int{}
	for _, tn := range sc.Spec.Tenants {
		limits[tn.Name] = limitOf(sc, tn.Name)
	}
	peak := map[string]int{}
	r := run(t, sc, Allot, func(s *sim) {
		for i, name := range s.m.tenants {
			used := s.m.perTenant[i]
			if used > peak[name] {
				peak[name] = used
			}
			if used > limits[name] {
				t.Fatalf("t=%v tenant %s uses %d GPUs, limit %d", s.now, name, used, limits[name])
			}
		}
	})
	must.Positive(t, r.Cycles)
	// The heavy tenant a reaches its limit: the check is not vacuous.
	must.EqOp(t, limits["a"], peak["a"])
}

func TestNomadFIFOIgnoresLimits(t *testing.T) {
	sc := smallScenario(t, 5)
	limitA := int(sc.Spec.Tenants[0].GPULimit * float64(sc.Spec.GPUs()))
	peak := 0
	run(t, sc, NomadFIFO, func(s *sim) {
		if u := s.m.perTenant[s.m.tIdx["a"]]; u > peak {
			peak = u
		}
	})
	must.Greater(t, limitA, peak)
}

func TestFairShare(t *testing.T) {
	cases := map[string]struct {
		capacity        int
		weights, demand []int
		want            []float64
	}{
		"all demand met":         {100, []int{1, 1}, []int{10, 20}, []float64{10, 20}},
		"split by weight":        {90, []int{1, 2}, []int{100, 100}, []float64{30, 60}},
		"leftover redistributed": {100, []int{1, 1, 2}, []int{10, 100, 100}, []float64{10, 30, 60}},
		"no demand":              {100, []int{1, 1}, []int{0, 0}, []float64{0, 0}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := FairShare(tc.capacity, tc.weights, tc.demand)
			for i := range got {
				must.Between(t, tc.want[i]-1e-6, got[i], tc.want[i]+1e-6)
			}
		})
	}
}

// TestEntitlementStopsAtLimit: a tenant is entitled to no more than
// its hard limit; what it cannot take goes to the others, so a run that
// gives the limited tenant its limit and the rest to the other has no
// share error, and one that splits by weight alone has.
func TestEntitlementStopsAtLimit(t *testing.T) {
	r := &Result{GPUs: 10, Tenants: []string{"a", "b"}, Entitled: []int{1, 1}, Limit: []int{3, 0},
		Jobs: []JobResult{{Tenant: "a", GPUs: 10, Submit: time.Hour}, {Tenant: "b", GPUs: 10, Submit: time.Hour}}}
	sample := func(at time.Duration, a, b int) Sample {
		return Sample{T: at, Allocated: a + b, Useful: a + b, Tenant: []int{a, b}, Demand: []int{10, 10}}
	}
	r.Samples = []Sample{sample(0, 3, 7), sample(time.Hour, 3, 7)}
	sum := Summarize(r)
	must.Between(t, 0, sum.ShareError, 1e-9)
	must.Between(t, 3-1e-9, sum.Shares[0].Entitled/sum.Shares[1].Entitled*7, 3+1e-9)

	r.Samples = []Sample{sample(0, 5, 5), sample(time.Hour, 5, 5)}
	must.Between(t, 0.4-1e-9, Summarize(r).ShareError, 0.4+1e-9)

	r.Limit = nil // no limits known: weights alone
	must.Between(t, 0, Summarize(r).ShareError, 1e-9)
}

func TestBadOptionsAndJobs(t *testing.T) {
	sc := smallScenario(t, 1)
	_, err := Run(sc.Spec, sc.Jobs, "slurm", DefaultOptions())
	must.ErrorContains(t, err, `unknown policy "slurm"`)
	jobs := append(sc.Jobs[:0:0], sc.Jobs[:3]...)
	bad := *jobs[0]
	bad.Tenant = "nobody"
	jobs[0] = &bad
	_, err = Run(sc.Spec, jobs, Allot, DefaultOptions())
	must.ErrorContains(t, err, `tenant "nobody" is not in the cluster file`)
	for _, set := range []func(*Options){
		func(o *Options) { o.StartDelay = -time.Second },
		func(o *Options) { o.StopDelay = MaxDelay + time.Nanosecond },
		func(o *Options) { o.StartDelay = time.Duration(1<<63 - 1) }, // s.now + it would wrap
	} {
		opts := DefaultOptions()
		set(&opts)
		_, err = Run(sc.Spec, sc.Jobs, Allot, opts)
		must.ErrorContains(t, err, "start and stop delays must be between 0 and 24h0m0s")
	}
}

func TestSnapshotAtQueuesWhatNomadCouldNotPlace(t *testing.T) {
	sc := smallScenario(t, 4)
	snap, err := SnapshotAt(sc.Spec, sc.Jobs, 24*time.Hour, DefaultOptions())
	must.NoError(t, err)
	states := map[engine.State]int{}
	for _, j := range snap.Jobs {
		states[j.State]++
	}
	must.Positive(t, states[engine.Queued])
	must.Positive(t, states[engine.Admitted])
	must.Positive(t, len(snap.Allocs))
	must.EqOp(t, epoch.Add(24*time.Hour), snap.Now)
	plan := engine.Decide(DefaultEngine(), snap)
	must.NotNil(t, plan)
}

// TestCheckpointOnStopLosesNoWork: with CheckpointOnStop a preempted job
// keeps all its work (the ckpt driver's checkpoint before the stop);
// without it, the small scenario's preemptions lose work since the last
// periodic checkpoint. The same preemptions happen either way until the
// first restart, so both runs preempt. Result.Losses records, with its
// time, every loss the jobs count.
func TestCheckpointOnStopLosesNoWork(t *testing.T) {
	sc := smallScenario(t, 3)
	lost := func(onStop bool) (float64, int) {
		opts := DefaultOptions()
		opts.CheckpointOnStop = onStop
		r, err := Run(sc.Spec, sc.Jobs, Allot, opts)
		must.NoError(t, err)
		var sec, recorded float64
		pre := 0
		for _, j := range r.Jobs {
			sec += j.LostGPUSeconds
			pre += j.Preemptions
		}
		for _, l := range r.Losses {
			must.Positive(t, l.GPUSeconds)
			recorded += l.GPUSeconds
		}
		must.Between(t, sec-1e-6, recorded, sec+1e-6, must.Sprint("every loss is recorded with its time"))
		return sec, pre
	}
	periodic, prePeriodic := lost(false)
	onStop, preOnStop := lost(true)
	must.Positive(t, prePeriodic)
	must.Positive(t, preOnStop)
	must.Positive(t, periodic, must.Sprint("periodic checkpoints lose the work since the last one"))
	must.Eq(t, 0.0, onStop, must.Sprint("a checkpoint on the stop keeps every step"))
}

// TestSavesOnStopJobsLoseNoWork: without CheckpointOnStop, the jobs the
// workload marks as running under the ckpt driver keep their work when
// preempted and the others lose theirs; the engine is told which save.
func TestSavesOnStopJobsLoseNoWork(t *testing.T) {
	sc := smallScenario(t, 3)
	workload.MarkSavesOnStop(sc.Jobs, 0.5, 3)
	saves := map[string]bool{}
	for _, w := range sc.Jobs {
		saves[w.ID] = w.SavesOnStop
	}
	r, err := Run(sc.Spec, sc.Jobs, Allot, DefaultOptions())
	must.NoError(t, err)
	preempted := map[bool]int{}
	var unsavedLoss float64
	for _, j := range r.Jobs {
		preempted[saves[j.ID]] += j.Preemptions
		if saves[j.ID] {
			must.Eq(t, 0.0, j.LostGPUSeconds, must.Sprintf("job %s saves when stopped", j.ID))
			continue
		}
		unsavedLoss += j.LostGPUSeconds
	}
	must.Positive(t, preempted[true], must.Sprint("some saving jobs were preempted"))
	must.Positive(t, preempted[false])
	must.Positive(t, unsavedLoss, must.Sprint("the others lose work since their last checkpoint"))
}

// TestStartDelay: with StartDelay a job's work begins that long after its
// last allocation is placed, its allocations hold their GPUs meanwhile
// and the engine sees them as not started; starts scheduled before a
// requeue are dropped (every job within its limit still ends exactly
// once, capacity stays within bounds).
func TestStartDelay(t *testing.T) {
	sc := smallScenario(t, 3)
	const delay = 5 * time.Minute
	for _, p := range Policies() {
		t.Run(string(p), func(t *testing.T) {
			opts := DefaultOptions()
			opts.StartDelay = delay
			seen := 0
			opts.OnCycle = func(snap *engine.Snapshot, _ *engine.Plan) {
				for _, a := range snap.Allocs {
					must.EqOp(t, !snap.Now.Before(a.StartedAt.Add(delay)), a.Started, must.Sprintf("alloc %s at %v", a.ID, snap.Now))
					if !a.Started {
						seen++
					}
				}
			}
			s, err := newSim(sc.Spec, sc.Jobs, p, opts)
			must.NoError(t, err)
			s.onSettle = func() {
				checkNodes(t, s)
				for _, a := range s.live {
					if a.job.running && s.now < a.start+delay {
						t.Fatalf("t=%v job %s runs on an allocation placed at %v", s.now, a.job.w.ID, a.start)
					}
				}
			}
			s.loop()
			r := s.result()
			finished, preempted := 0, 0
			for _, j := range r.Jobs {
				preempted += j.Preemptions
				if j.End < 0 {
					continue
				}
				finished++
				must.EqOp(t, 1, j.Ends)
				must.GreaterEq(t, j.Submit+delay, j.Start, must.Sprintf("job %s", j.ID))
				if j.Preemptions == 0 {
					must.EqOp(t, j.Duration, j.End-j.Start, must.Sprintf("job %s", j.ID))
				}
			}
			must.Positive(t, finished)
			if p == Allot {
				must.Positive(t, seen, must.Sprint("the engine saw allocations not started yet"))
				must.Positive(t, preempted, must.Sprint("requeues happen during and after delays"))
			}
		})
	}
}

// TestStopDelay: with StopDelay the allocations of a job allot requeues
// keep their GPUs that long, the engine sees them as stopping, every
// GPU a node lacks is held by a live or stopping allocation of it, and
// no tenant's live allocations exceed its limit. Stopping ones do not
// count (ARCHITECTURE.md: usage is what Nomad is to run), so while one
// stops its tenant may hold more, for at most the delay.
func TestStopDelay(t *testing.T) {
	sc := smallScenario(t, 3)
	const delay = 5 * time.Minute
	opts := DefaultOptions()
	opts.StopDelay = delay
	limits := map[string]int{}
	for _, tn := range sc.Spec.Tenants {
		limits[tn.Name] = limitOf(sc, tn.Name)
	}
	stoppingSeen := 0
	opts.OnCycle = func(snap *engine.Snapshot, _ *engine.Plan) {
		for _, a := range snap.Allocs {
			if a.Stopping {
				must.False(t, a.Live)
				stoppingSeen++
			}
		}
	}
	s, err := newSim(sc.Spec, sc.Jobs, Allot, opts)
	must.NoError(t, err)
	s.onSettle = func() {
		checkNodes(t, s)
		held, live := map[*node]int{}, map[string]int{}
		for _, a := range s.live {
			live[a.job.w.Tenant] += a.gpus
		}
		for tenant, n := range live {
			if n > limits[tenant] {
				t.Fatalf("t=%v tenant %s runs %d GPUs, limit %d", s.now, tenant, n, limits[tenant])
			}
		}
		for _, a := range append(append([]*alloc(nil), s.live...), s.stopping...) {
			held[a.node] += a.gpus
		}
		for _, a := range s.stopping {
			if s.now >= a.until || a.until-s.now > delay {
				t.Fatalf("t=%v allocation of %s stops until %v", s.now, a.job.w.ID, a.until)
			}
		}
		for _, nd := range s.nodes {
			free := 0
			for i, f := range nd.free {
				free += nd.n.Devices[i].Healthy - f
			}
			if free != held[nd] {
				t.Fatalf("t=%v node %s: %d GPUs taken, %d held by allocations", s.now, nd.n.ID, free, held[nd])
			}
		}
	}
	s.loop()
	r := s.result()
	must.Positive(t, stoppingSeen, must.Sprint("cycles saw stopping allocations"))
	must.SliceEmpty(t, s.stopping, must.Sprint("every stopping allocation was released"))
	tooBig, finished := 0, 0
	for _, j := range r.Jobs {
		if j.GPUs > limitOf(sc, j.Tenant) {
			tooBig++
		}
		if j.End >= 0 {
			finished++
		}
	}
	must.EqOp(t, len(r.Jobs)-tooBig, finished, must.Sprint("every job within its tenant's limit finishes"))
}

// TestJobAboveLimitIsNoDemand: a job that asks for more GPUs than its
// tenant's hard limit never runs under Allot, and the samples do not count
// it as demand (the entitlement would otherwise hand its tenant GPUs no
// scheduler that honours the limit can give); nor under nomad-fifo,
// which ignores limits.
func TestJobAboveLimitIsNoDemand(t *testing.T) {
	sc := smallScenario(t, 2)
	limitC := limitOf(sc, "c")
	huge := &workload.Job{ID: "c-huge", Submit: time.Hour, Tenant: "c", Duration: time.Hour,
		Gang: true, Groups: []workload.Group{{Count: limitC/8 + 1, GPUs: 8, CPU: 1000, MemoryMB: 1024}}}
	var rest []*workload.Job
	for _, j := range sc.Jobs {
		if j.Tenant != "c" {
			rest = append(rest, j)
		}
	}
	// c asks for nothing but the huge job.
	jobs := append([]*workload.Job{huge}, rest...)
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].Submit < jobs[b].Submit })
	for _, p := range []Policy{Allot, NomadFIFO} {
		t.Run(string(p), func(t *testing.T) {
			r, err := Run(sc.Spec, jobs, p, DefaultOptions())
			must.NoError(t, err)
			c := -1
			for i, name := range r.Tenants {
				if name == "c" {
					c = i
				}
			}
			must.NonNegative(t, c)
			after := 0
			for _, s := range r.Samples {
				must.Zero(t, s.Demand[c], must.Sprintf("t=%v", s.T))
				if s.T > huge.Submit {
					after++
				}
			}
			must.Positive(t, after)
			if p == Allot {
				for _, j := range r.Jobs {
					if j.ID == huge.ID {
						must.Negative(t, j.Start)
					}
				}
			}
		})
	}
}

// TestCyclesCarryTheClaimClock: each cycle's snapshot holds the previous
// plan's Claims (when its queued claims became claims), as the
// reconciler carries them, so the reclaim wait limit counts from then.
func TestCyclesCarryTheClaimClock(t *testing.T) {
	sc := smallScenario(t, 3)
	opts := DefaultOptions()
	var last map[string]time.Time
	carried := 0
	opts.OnCycle = func(snap *engine.Snapshot, p *engine.Plan) {
		must.Eq(t, last, snap.Claims)
		for key, since := range p.Claims {
			if since.Before(snap.Now) {
				carried++
			}
			must.NotNil(t, p.Verdicts[key], must.Sprint("a claim is a job of the snapshot"))
		}
		last = p.Claims
	}
	s, err := newSim(sc.Spec, sc.Jobs, Allot, opts)
	must.NoError(t, err)
	s.loop()
	must.Positive(t, carried, must.Sprint("claims outlived a cycle"))
}

// TestSnapshotsListFinishedJobsDead: as the governor's store, the
// simulated governor sees a finished job, dead, for deadRetention (the
// engine reads who preempted whom from such jobs), and not after.
func TestSnapshotsListFinishedJobsDead(t *testing.T) {
	sc := smallScenario(t, 3)
	opts := DefaultOptions()
	var s *sim
	seen := 0
	opts.OnCycle = func(snap *engine.Snapshot, _ *engine.Plan) {
		dead := map[string]bool{}
		for _, j := range snap.Jobs {
			if j.Dead {
				dead[j.Key()] = true
			}
		}
		for _, j := range s.jobs[:s.submitted] {
			recent := j.done && s.now-j.end <= deadRetention
			must.Eq(t, recent, dead[j.key()], must.Sprintf("job %s at %v (done %v, ended %v)", j.key(), s.now, j.done, j.end))
		}
		seen += len(dead)
	}
	var err error
	s, err = newSim(sc.Spec, sc.Jobs, Allot, opts)
	must.NoError(t, err)
	s.loop()
	must.Positive(t, seen, must.Sprint("no cycle saw a finished job"))
}

func TestDeadRetentionIsTheStores(t *testing.T) {
	must.Eq(t, cluster.DeadJobRetention, deadRetention)
}

// TestSnapshotsCarryEveryKeptPreemptor: as the governor's
// allot.preempted-by, a simulated job's PreemptedBy lists its newest
// eight preemptors, most recent last, across requeues without one (the
// simulator once passed the latest alone, so a victim could preempt an
// earlier preemptor, which the engine's loop rule forbids on the stack).
func TestSnapshotsCarryEveryKeptPreemptor(t *testing.T) {
	sc := smallScenario(t, 3)
	opts := DefaultOptions()
	want := map[string][]string{}
	checked, several := 0, 0
	opts.OnCycle = func(snap *engine.Snapshot, p *engine.Plan) {
		for _, j := range snap.Jobs {
			if list, ok := want[j.Key()]; ok {
				must.Eq(t, strings.Join(list, " "), j.PreemptedBy, must.Sprint(j.Key()))
				checked++
				if len(list) > 1 {
					several++
				}
			}
		}
		for _, d := range p.Decisions {
			if d.Action == engine.Requeue && d.Preemptor != "" {
				key := d.Namespace + "/" + d.JobID
				want[key] = jobmeta.WithPreemptor(want[key], d.Preemptor)
			}
		}
	}
	s, err := newSim(sc.Spec, sc.Jobs, Allot, opts)
	must.NoError(t, err)
	s.loop()
	must.Positive(t, several, must.Sprintf("jobs preempted by several jobs (of %d checked)", checked))
}

// TestKeepsPreemptorsAsTheMeta: the simulator's copy of
// allot.preempted-by's rule (notePreemptor) keeps what the governor's
// (jobmeta.WithPreemptor) keeps, repeats and more than eight included.
func TestKeepsPreemptorsAsTheMeta(t *testing.T) {
	var j jobRun
	var meta []string
	for _, k := range []string{"a/1", "b/2", "", "c/3", "a/1", "d/4", "e/5", "f/6", "g/7", "h/8", "i/9", "b/2", "j/10"} {
		j.notePreemptor(k)
		if k != "" {
			meta = jobmeta.WithPreemptor(meta, k)
		}
		must.Eq(t, meta, j.preemptedBy)
	}
	must.SliceLen(t, preemptorsKept, j.preemptedBy)
}
