// Package sim is a discrete-event simulator of a Nomad GPU cluster: it
// replays a workload on a cluster described by device-plugin inventories,
// places allocations the way Nomad 1.6's batch scheduler does, and compares
// scheduling policies: Nomad alone (FIFO or priorities with native
// preemption) and Allot, whose decisions come from the governor's real
// engine (engine.Decide).
package sim

import (
	"container/heap"
	"fmt"
	"math/rand"
	"runtime/debug"
	"sort"
	"strconv"
	"time"

	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/quota"
	"github.com/allot-sh/allot/governor/sim/fleet"
	"github.com/allot-sh/allot/governor/sim/workload"
)

// Policy names a scheduling policy.
type Policy string

// The policies compared.
const (
	// NomadFIFO is Nomad alone: jobs placed as they come, blocked
	// evaluations retried in submission order when capacity frees.
	NomadFIFO Policy = "nomad-fifo"
	// NomadPriority is Nomad with class priorities and native preemption
	// (priority gap ≥ 10, node-local, quota- and checkpoint-blind).
	NomadPriority Policy = "nomad-priority"
	// Allot puts the governor's engine in front of Nomad: quotas, classes,
	// fair-share order, gang admission and whatever preemption the engine
	// decides.
	Allot Policy = "allot"
)

// Policies lists every policy, in report order.
func Policies() []Policy { return []Policy{NomadFIFO, NomadPriority, Allot} }

// ParsePolicy checks a policy name.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range Policies() {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown policy %q (want nomad-fifo, nomad-priority or allot)", s)
}

// Options tune a run.
type Options struct {
	// Seed drives every random choice of the placement model.
	Seed int64
	// Engine is the governor engine's configuration (classes, starvation
	// timeout, …); DefaultEngine gives the governor's defaults.
	Engine engine.Config
	// CycleInterval is the shortest time between two governor cycles.
	CycleInterval time.Duration
	// SampleInterval is how often allocation and shares are sampled.
	SampleInterval time.Duration
	// PreemptRetry is how often a blocked job retries Nomad preemption.
	PreemptRetry time.Duration
	// Horizon ends the run; zero runs until every job has ended.
	Horizon time.Duration
	// CheckpointOnStop models jobs that save a checkpoint when they are
	// stopped, as the ckpt driver asks before a preemption's stop (the
	// toy trainer of the fidelity replay does): a requeue keeps all the
	// work done. The engine is told (engine.Group.SavesOnStop, as the
	// governor reads the ckpt driver from a jobspec) but still judges
	// victims by their periodic checkpoints (workload Checkpoint); only
	// its nominal-first reclaim ranking counts on the save. Off: work since the
	// last periodic checkpoint is lost. Jobs marked
	// workload.Job.SavesOnStop save when stopped either way.
	CheckpointOnStop bool
	// StartDelay is how long a job's tasks take to run once its last
	// allocation is placed (Nomad's client starting the task); the
	// allocations hold their GPUs meanwhile and the engine sees them as
	// not started yet. Zero starts them at once. On the real stack of the
	// fidelity replays it is 0.1–0.7 s (median 0.26 s, jobs admitted at
	// submission): large next to 2–16-s jobs, negligible next to hours.
	StartDelay time.Duration
	// StopDelay is how long the allocations of a job allot requeues keep
	// their GPUs after the governor stops it (the ckpt driver asking the
	// task to checkpoint, the task exiting, the client reporting it):
	// Nomad counts an allocation's resources until its client status is
	// terminal, and the engine sees it as stopping (Alloc.Stopping). The
	// job's work stops at once. Zero frees them at once. Nomad's own
	// preemption (nomad-priority) places the preemptor in the same plan
	// and is not delayed.
	StopDelay time.Duration
	// OnCycle, when set, sees every allot cycle's snapshot and plan
	// (measurements such as report's TestReservations; read only).
	OnCycle func(snap *engine.Snapshot, plan *engine.Plan)
}

// MaxDelay bounds Options.StartDelay and StopDelay: a day is already far
// beyond any task's start or checkpoint.
const MaxDelay = 24 * time.Hour

// MaxRequeueRest bounds Options.Engine.RequeueRest (the engine's bound).
const MaxRequeueRest = engine.RequeueRestMax

// Values of Options.Engine.FairClasses (the engine's fair-share class
// modes).
const (
	FairClassesNotAbove = engine.FairClassesNotAbove
	FairClassesAny      = engine.FairClassesAny
)

// Values of Options.Engine.FairShareRule (the engine's fair-share rules).
const (
	FairRuleGap         = engine.FairRuleGap
	FairRuleEntitlement = engine.FairRuleEntitlement
	FairRuleAuto        = engine.FairRuleAuto
)

// Values of Options.Engine.QueueOrder (the engine's queue orders).
const (
	QueueOrderClass = engine.QueueOrderClass
	QueueOrderShare = engine.QueueOrderShare
)

// Values of Options.Engine.Reclaim (the engine's reclaim modes).
const (
	ReclaimAny          = engine.ReclaimAny
	ReclaimCheckpointed = engine.ReclaimCheckpointed
)

// ReclaimWithBound is the reclaim mode in force given a mode, whether
// one was set, and a ReclaimMaxLoss bound (engine.ReclaimWithBound: a
// lone bound means ReclaimAny).
func ReclaimWithBound(mode string, modeSet bool, bound time.Duration) string {
	return engine.ReclaimWithBound(mode, modeSet, bound)
}

// DefaultEngine returns the engine configuration the governor runs with by
// default.
func DefaultEngine() engine.Config { return config.Default().Engine() }

// DefaultOptions returns the options `allotctl sim` uses by default.
func DefaultOptions() Options {
	return Options{Seed: 1, Engine: DefaultEngine(), CycleInterval: 10 * time.Second,
		SampleInterval: 10 * time.Minute, PreemptRetry: 5 * time.Minute}
}

// epoch is the simulation's time zero in wall-clock terms (engine input).
var epoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

type sim struct {
	opts     Options
	policy   Policy
	nodes    []*node
	engNodes []*engine.Node
	tenants  map[string]*engine.Tenant
	jobs     []*jobRun
	rng      *rand.Rand
	events   eventHeap
	seq      int
	now      time.Duration
	// freed logs the node index of every capacity release; its length is
	// the placement epoch.
	freed    []int
	blocked  []*jobRun
	held     []*jobRun
	live     []*alloc
	cycleAt  time.Duration
	dirty    bool
	lastPass int
	m        *collector
	perm     []int
	// nodeIdx indexes nodes by ID (placement pins name node IDs).
	nodeIdx map[string]int
	// latest is the plan of the last allot cycle (proxyAdmit reads its
	// starving heads).
	latest *engine.Plan
	// claims is latest's Plan.Claims, the next cycle's Snapshot.Claims
	// (the reconciler carries them the same way).
	claims map[string]time.Time
	// taken is latest's Plan.Taken, the next cycle's Snapshot.Taken
	// (carried as the reconciler carries it).
	taken map[string]map[string]time.Time
	// moveHolds is latest's Plan.MoveHolds, the next cycle's
	// Snapshot.MoveHolds.
	moveHolds map[string]engine.MoveHold
	// stopping holds the allocations of requeued jobs that still hold
	// their capacity (StopDelay).
	stopping []*alloc
	// heldSince counts, per node pool, the submissions proxyAdmit held
	// for capacity since latest.
	heldSince map[string]int
	ended     int
	// submitted counts the jobs submitted so far (s.jobs is in submission
	// order); firstOpen is the first job that has not finished.
	submitted, firstOpen int
	// finished holds the jobs that ended within deadRetention, oldest
	// first: the governor's store lists them, dead, that long.
	finished []*jobRun
	// onSettle, when set (tests), runs after every batch of events.
	onSettle func()
	// est learns run times of finished jobs per tenant and GPU count
	// (allot's runtime estimates for jobs without allot.max-runtime).
	est *engine.Estimator
}

// Run simulates jobs on the cluster of spec under policy.
func Run(spec *fleet.Spec, jobs []*workload.Job, policy Policy, opts Options) (*Result, error) {
	// A run allocates many short-lived snapshots: trade memory for less
	// garbage collection while it lasts.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	s, err := newSim(spec, jobs, policy, opts)
	if err != nil {
		return nil, err
	}
	s.loop()
	return s.result(), nil
}

func newSim(spec *fleet.Spec, jobs []*workload.Job, policy Policy, opts Options) (*sim, error) {
	if _, err := ParsePolicy(string(policy)); err != nil {
		return nil, err
	}
	if opts.CycleInterval <= 0 || opts.SampleInterval <= 0 || opts.PreemptRetry <= 0 {
		return nil, fmt.Errorf("cycle, sample and preempt-retry intervals must be > 0")
	}
	for _, d := range []time.Duration{opts.StartDelay, opts.StopDelay} {
		if d < 0 || d > MaxDelay {
			return nil, fmt.Errorf("start and stop delays must be between 0 and %v, not %v", MaxDelay, d)
		}
	}
	s := &sim{opts: opts, policy: policy, rng: rand.New(rand.NewSource(opts.Seed)), cycleAt: -1, est: engine.NewEstimator()}
	s.engNodes = spec.Nodes()
	s.nodes = newNodes(s.engNodes)
	s.perm = make([]int, len(s.nodes))
	s.nodeIdx = make(map[string]int, len(s.nodes))
	for i, nd := range s.nodes {
		s.nodeIdx[nd.n.ID] = i
	}
	tenants, err := engineTenants(spec, opts.Engine)
	if err != nil {
		return nil, err
	}
	s.tenants = tenants
	s.m = newCollector(spec, jobs, opts)
	jobs = append([]*workload.Job(nil), jobs...)
	workload.Sort(jobs)
	for i, w := range jobs {
		if err := w.Validate(); err != nil {
			return nil, fmt.Errorf("job %s: %w", w.ID, err)
		}
		if _, ok := tenants[w.Tenant]; !ok {
			return nil, fmt.Errorf("job %s: tenant %q is not in the cluster file", w.ID, w.Tenant)
		}
		j := &jobRun{w: w, idx: i, priority: s.priority(w), firstStart: -1, end: -1, lastPreemptTry: -1}
		s.jobs = append(s.jobs, j)
		s.push(event{t: w.Submit, kind: evSubmit, job: j})
	}
	s.push(event{t: 0, kind: evSample})
	return s, nil
}

func engineTenants(spec *fleet.Spec, cfg engine.Config) (map[string]*engine.Tenant, error) {
	known := map[string]bool{}
	for c := range cfg.Classes {
		known[c] = true
	}
	out := map[string]*engine.Tenant{}
	for _, t := range spec.Tenants {
		qt, err := quota.Parse(t.Name, t.NamespaceMeta(spec.GPUs()), known)
		if err != nil {
			return nil, fmt.Errorf("tenant %s: %w", t.Name, err)
		}
		out[t.Name] = &engine.Tenant{Tenant: qt}
	}
	return out, nil
}

// priority is the Nomad job priority a job runs with under the policy.
func (s *sim) priority(w *workload.Job) int {
	if s.policy == NomadFIFO {
		return 50
	}
	class := w.Class
	if class == "" {
		class = s.tenants[w.Tenant].DefaultClass
	}
	if c, ok := s.opts.Engine.Classes[class]; ok {
		return c.Priority
	}
	return 50
}

func (s *sim) loop() {
	for s.events.Len() > 0 {
		t := s.events[0].t
		if s.opts.Horizon > 0 && t > s.opts.Horizon {
			break
		}
		// Only the sampler left: every job ended, or the rest can never
		// run (e.g. partly placed gangs holding each other's GPUs).
		if s.events.Len() == 1 && s.events[0].kind == evSample {
			break
		}
		s.now = t
		for s.events.Len() > 0 && s.events[0].t == t {
			s.handle(heap.Pop(&s.events).(event))
		}
		s.settle()
		if s.onSettle != nil {
			s.onSettle()
		}
	}
	s.m.finish(s)
}

func (s *sim) handle(e event) {
	switch e.kind {
	case evFinish:
		if e.seq == e.job.finishSeq && e.job.running {
			s.finish(e.job)
		}
	case evStart:
		if e.seq == e.job.startSeq {
			s.start(e.job)
		}
	case evRelease:
		s.release(e.alloc)
	case evSubmit:
		s.submit(e.job)
	case evCycle:
		s.cycleAt = -1
		s.cycle()
	case evSample:
		s.m.sample(s)
		s.push(event{t: s.now + s.opts.SampleInterval, kind: evSample})
	}
}

// settle runs what follows a batch of events: Nomad retries blocked
// evaluations when capacity came free, Allot schedules its next cycle.
func (s *sim) settle() {
	if len(s.freed) > s.lastPass {
		s.lastPass = len(s.freed)
		s.retryBlocked()
	}
	if s.policy == Allot && s.dirty && s.cycleAt < 0 && len(s.held) > 0 {
		s.cycleAt = s.now
		if last := s.m.lastCycle; last >= 0 && last+s.opts.CycleInterval > s.now {
			s.cycleAt = last + s.opts.CycleInterval
		}
		s.push(event{t: s.cycleAt, kind: evCycle})
	}
}

func (s *sim) submit(j *jobRun) {
	j.queuedAt = s.now
	s.submitted++
	if s.policy == Allot {
		j.held = true
		s.held = append(s.held, j)
		s.dirty = true
		s.proxyAdmit(j)
		return
	}
	s.toNomad(j)
}

// toNomad registers (or admits) a job in Nomad: its evaluation places what
// it can; the rest waits in a blocked evaluation.
func (s *sim) toNomad(j *jobRun) {
	j.pending = j.pending[:0]
	for gi, g := range j.w.Groups {
		for k := 0; k < g.Count; k++ {
			j.pending = append(j.pending, gi)
		}
	}
	s.evaluate(j, nil)
	if len(j.pending) > 0 {
		s.block(j)
	}
}

func (s *sim) block(j *jobRun) {
	for _, b := range s.blocked {
		if b == j {
			return
		}
	}
	s.blocked = append(s.blocked, j)
}

// retryBlocked re-evaluates blocked jobs in Nomad's eval order: priority,
// then age. Only nodes where capacity came free since a job's last attempt
// can newly fit it, so only those are searched.
func (s *sim) retryBlocked() {
	sort.SliceStable(s.blocked, func(a, b int) bool {
		ja, jb := s.blocked[a], s.blocked[b]
		if ja.priority != jb.priority {
			return ja.priority > jb.priority
		}
		return ja.idx < jb.idx
	})
	keep := s.blocked[:0]
	for _, j := range append([]*jobRun(nil), s.blocked...) {
		if j.done || len(j.pending) == 0 {
			continue
		}
		s.evaluate(j, s.freedSince(j.triedEpoch))
		if len(j.pending) > 0 {
			keep = append(keep, j)
		}
	}
	s.blocked = keep
}

func (s *sim) freedSince(ep int) []int {
	seen := map[int]bool{}
	var out []int
	for _, n := range s.freed[ep:] {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// finish ends a job whose work is done.
func (s *sim) finish(j *jobRun) {
	j.progress += s.now - j.runningSince
	j.running = false
	for len(j.allocs) > 0 {
		s.stopAlloc(j.allocs[len(j.allocs)-1])
	}
	j.done, j.end = true, s.now
	s.finished = append(s.finished, j)
	s.est.Observe(estimateKey(j), j.w.Duration)
	s.ended++
	j.ended++
	s.dirty = true
}

func (s *sim) push(e event) {
	s.seq++
	e.seq2 = s.seq
	if e.kind == evFinish {
		e.seq = e.job.finishSeq
	}
	heap.Push(&s.events, e)
}

// startIfComplete starts a job's work once every allocation is placed,
// after the options' StartDelay.
func (s *sim) startIfComplete(j *jobRun) {
	if !s.complete(j) {
		return
	}
	if s.opts.StartDelay > 0 {
		j.startSeq++ // a start scheduled before a requeue is stale
		s.push(event{t: s.now + s.opts.StartDelay, kind: evStart, job: j, seq: j.startSeq})
		return
	}
	s.start(j)
}

func (s *sim) complete(j *jobRun) bool {
	return !j.running && len(j.pending) == 0 && len(j.allocs) == j.w.Allocs()
}

// start runs a job whose allocations are all placed.
func (s *sim) start(j *jobRun) {
	if !s.complete(j) {
		return
	}
	j.running, j.runningSince = true, s.now
	if j.firstStart < 0 {
		j.firstStart = s.now
	}
	j.finishSeq++
	s.push(event{t: s.now + j.w.Duration - j.progress, kind: evFinish, job: j})
}

// interrupt stops a job's work: it falls back to its last checkpoint and
// the GPU time since is lost.
func (s *sim) interrupt(j *jobRun) {
	if !j.running {
		return
	}
	j.running = false
	j.progress += s.now - j.runningSince
	lost := s.unsaved(j, j.progress)
	j.progress -= lost
	j.lostGPUSec += lost.Seconds() * float64(j.w.GPUs())
	s.m.lost(s.now, lost.Seconds()*float64(j.w.GPUs()))
	j.preempted++
	j.finishSeq++
}

// unsaved is how much of done, job j's work so far, a stop throws away:
// none when the job saves a checkpoint when stopped, else the work since
// its last periodic checkpoint (all of it when it never checkpoints).
func (s *sim) unsaved(j *jobRun, done time.Duration) time.Duration {
	switch c := j.w.Checkpoint; {
	case s.opts.CheckpointOnStop || j.w.SavesOnStop:
		return 0
	case c > 0:
		return done - done/c*c
	}
	return done
}

// estimateKey is what run times are learned by: tenant and GPUs.
func estimateKey(j *jobRun) string {
	return j.w.Tenant + "|" + strconv.Itoa(j.w.GPUs())
}
