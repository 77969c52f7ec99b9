package idle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/contract/ckptevent"
)

// fakeNomad is a Source and Namespaces whose telemetry a test sets.
type fakeNomad struct {
	mu     sync.Mutex
	allocs []*api.AllocationListStub
	// util and mem per device ID; a device absent from util reports nothing.
	util  map[string]float64
	mem   map[string]int64
	procs map[string]int64
	meta  map[string]map[string]string
	// services are the job IDs of service jobs (submitted at t0)
	services map[string]bool
	// byID, when set, indexes allocs (benchmarks, whose allocs never
	// change): a lookup per allocation would make a period quadratic.
	byID map[string]*api.AllocationListStub
}

func (f *fakeNomad) Allocations(context.Context) ([]*api.AllocationListStub, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*api.AllocationListStub(nil), f.allocs...), nil
}

func (f *fakeNomad) stats(ids []string) []*api.DeviceGroupStats {
	g := &api.DeviceGroupStats{Vendor: "nvidia", Type: "gpu", Name: "H100", InstanceStats: map[string]*api.DeviceStats{}}
	for _, id := range ids {
		u, ok := f.util[id]
		if !ok {
			continue
		}
		mem, procs := f.mem[id], f.procs[id]
		g.InstanceStats[id] = &api.DeviceStats{Summary: &api.StatValue{IntNumeratorVal: &mem}, Stats: &api.StatObject{
			Attributes: map[string]*api.StatValue{statUtilization: {FloatNumeratorVal: &u}, statProcesses: {IntNumeratorVal: &procs}}}}
	}
	return []*api.DeviceGroupStats{g}
}

func (f *fakeNomad) AllocDeviceStats(_ context.Context, id string) ([]*api.DeviceGroupStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.byID[id]; ok {
		return f.stats(a.AllocatedResources.Tasks["t"].Devices[0].DeviceIDs), nil
	}
	for _, a := range f.allocs {
		if a.ID == id {
			return f.stats(a.AllocatedResources.Tasks["t"].Devices[0].DeviceIDs), nil
		}
	}
	return nil, errors.New("no such allocation")
}

func (f *fakeNomad) NodeDeviceStats(context.Context, string) ([]*api.DeviceGroupStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id := range f.util {
		ids = append(ids, id)
	}
	return f.stats(ids), nil
}

func (f *fakeNomad) Jobs(context.Context) ([]*api.JobListStub, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*api.JobListStub
	for _, a := range f.allocs {
		typ := api.JobTypeBatch
		if f.services[a.JobID] {
			typ = api.JobTypeService
		}
		out = append(out, &api.JobListStub{ID: a.JobID, Namespace: a.Namespace, Type: typ, SubmitTime: t0.UnixNano()})
	}
	return out, nil
}

func (f *fakeNomad) DeviceNodes(context.Context) ([]string, error) { return []string{"n1"}, nil }

func (f *fakeNomad) Namespaces(context.Context) ([]*api.Namespace, error) {
	var out []*api.Namespace
	for ns, m := range f.meta {
		out = append(out, &api.Namespace{Name: ns, Meta: m})
	}
	return out, nil
}

func allocStub(id, job, status string, devs ...string) *api.AllocationListStub {
	return &api.AllocationListStub{ID: id, Namespace: "ml", JobID: job, NodeID: "n1", ClientStatus: status,
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
			"t": {Devices: []*api.AllocatedDeviceResource{{DeviceIDs: devs}}}}}}
}

type fakeReclaimer struct{ got []string }

func (f *fakeReclaimer) Reclaim(_ context.Context, c Candidate, _ Action) error {
	f.got = append(f.got, c.JobID)
	return nil
}

// fakeNotifier records the pseudo-signals the service would send.
type fakeNotifier struct{ got map[string][]string }

func (f *fakeNotifier) Notify(_ context.Context, allocID string, n ckptevent.IdleNotice) (int, error) {
	f.got[allocID] = append(f.got[allocID], n.Signal())
	return 1, nil
}

type fakeRecorder struct {
	events  []Event
	zombies []Zombie
}

func (f *fakeRecorder) RecordIdle(_ context.Context, _ time.Time, e Event) error {
	f.events = append(f.events, e)
	return nil
}

func (f *fakeRecorder) RecordZombie(_ context.Context, z Zombie) error {
	f.zombies = append(f.zombies, z)
	return nil
}

func TestServiceLadderAndZombie(t *testing.T) {
	nomad := &fakeNomad{
		allocs: []*api.AllocationListStub{
			allocStub("a-busy", "busy", "running", "g1"),
			allocStub("a-idle", "idle", "running", "g2", "g3"),
			allocStub("a-exempt", "exempt", "running", "g4"),
			allocStub("a-prod", "prod", "running", "g5"),
			allocStub("a-nb", "notebook", "running", "g6"),
		},
		services: map[string]bool{"notebook": true},
		util:     map[string]float64{"g1": 90, "g2": 1, "g3": 0, "g4": 0, "g5": 0, "g6": 70},
		mem:      map[string]int64{"g1": 9000, "g2": 9000, "g3": 9000, "g4": 9000, "g5": 9000, "g6": 9000},
		procs:    map[string]int64{},
		meta: map[string]map[string]string{"ml": {KeyWindow: "50s", KeyGrace: "30s", KeyNotice: "10s", KeyTTL: "60s",
			KeyExemptPrefix + "exempt": "until=2030-01-01T00:00:00Z;reason=benchmark"}},
	}
	now := t0
	rec, rc, nf := &fakeReclaimer{}, &fakeRecorder{}, &fakeNotifier{got: map[string][]string{}}
	s := NewService(Options{Source: nomad, Namespaces: nomad, Reclaimer: rec, Recorder: rc, Notifier: nf, Metrics: NewMetrics(nil),
		Defaults: DefaultPolicy(), Period: period, ZombieMemoryMiB: 256, Now: func() time.Time { return now },
		ClassOf:  func(_, job string) string { return map[string]string{"prod": "production"}[job] },
		WarnOnly: map[string]bool{"production": true}})
	for n := 0; n <= 8; n++ {
		now = t0.Add(time.Duration(n) * period)
		must.NoError(t, s.Once(context.Background()))
	}
	must.Eq(t, []string{"idle"}, rec.got)
	kinds := map[string][]Transition{}
	for _, e := range rc.events {
		kinds[e.Candidate.JobID] = append(kinds[e.Candidate.JobID], e.Kind)
	}
	// idle for the window (50 s) at 5 → suspect (not recorded), warned at
	// 5+3−1 = 7, reclaimed at 8; the notebook is busy but unclaimed:
	// submitted at t0, TTL 60 s, warned at once at 6
	must.Eq(t, map[string][]Transition{"idle": {Warn, Reclaim}, "prod": {Warn}, "notebook": {Warn}}, kinds)
	warnedAt := map[string]time.Time{}
	for _, e := range rc.events {
		if e.Kind == Warn {
			warnedAt[e.Candidate.JobID] = e.Candidate.WarnedAt
		}
	}
	must.Eq(t, map[string]time.Time{"idle": t0.Add(7 * period), "prod": t0.Add(7 * period), "notebook": t0.Add(6 * period)}, warnedAt)
	// each warning is a task event: the pseudo-signal names the due time
	// and the action (warn only for production)
	must.Eq(t, map[string][]string{
		"a-idle": {"ALLOT_IDLE_WARNING;since=2026-11-30T12:00:00Z;due=2026-11-30T12:01:20Z;action=checkpoint;class=idle-held"},
		"a-prod": {"ALLOT_IDLE_WARNING;since=2026-11-30T12:00:00Z;due=2026-11-30T12:01:20Z;action=warn;class=idle-held"},
		"a-nb":   {"ALLOT_IDLE_WARNING;since=2026-11-30T12:01:00Z;due=2026-11-30T12:01:30Z;action=checkpoint;class=unclaimed"},
	}, nf.got)
	byJob := map[string]Candidate{}
	for _, c := range s.Detector().Candidates() {
		byJob[c.JobID] = c
	}
	must.Eq(t, StepReclaimed, byJob["idle"].Step)
	must.Eq(t, ClassIdleHeld, byJob["idle"].Class)
	must.Eq(t, StepExempt, byJob["exempt"].Step)
	must.Eq(t, "benchmark", byJob["exempt"].Exemption.Reason)
	must.Eq(t, StepWarned, byJob["prod"].Step)
	must.Eq(t, ClassUnclaimed, byJob["notebook"].Class)
	must.Eq(t, t0.Add(time.Minute), byJob["notebook"].IdleSince)

	// the idle job's allocation completes but leaves memory and a process on g2
	nomad.mu.Lock()
	nomad.allocs[1].ClientStatus = "complete"
	nomad.procs["g2"] = 1
	nomad.mu.Unlock()
	for n := 9; n <= 10; n++ {
		now = t0.Add(time.Duration(n) * period)
		must.NoError(t, s.Once(context.Background()))
	}
	must.Len(t, 2, rc.zombies) // g2 and g3 (both still hold memory)
	must.Eq(t, t0.Add(9*period), rc.zombies[0].Since)

	// the answer is filtered by what the caller may read
	other := s.Answer(func(ns string) bool { return ns == "other" }, false)
	must.Len(t, 0, other.Candidates)
	must.Len(t, 0, other.Zombies)
	must.Len(t, 0, other.Policies)
	ml := s.Answer(func(ns string) bool { return ns == "ml" }, false)
	must.Len(t, 3, ml.Candidates) // exempt, prod, notebook: the idle job's allocation is gone
	must.Len(t, 0, ml.Zombies)
	must.Eq(t, "benchmark", ml.Policies[0].Exemptions["exempt"].Reason)
	must.Len(t, 2, s.Answer(nil, true).Zombies)
}

// TestMultiAllocationJob: a job is requeued as a whole, so it is reclaimed
// only when all of its allocations are due.
func TestMultiAllocationJob(t *testing.T) {
	nomad := &fakeNomad{allocs: []*api.AllocationListStub{allocStub("a1", "j", "running", "g1"), allocStub("a2", "j", "running", "g2")},
		util: map[string]float64{"g1": 0, "g2": 90}, mem: map[string]int64{"g1": 9000, "g2": 9000}, procs: map[string]int64{}}
	now := t0
	rec := &fakeReclaimer{}
	s := NewService(Options{Source: nomad, Namespaces: nomad, Reclaimer: rec, Defaults: testPolicy(), Period: period, Now: func() time.Time { return now }})
	tick := func(from, to int) {
		for n := from; n <= to; n++ {
			now = t0.Add(time.Duration(n) * period)
			must.NoError(t, s.Once(context.Background()))
		}
	}
	tick(0, 12)
	must.Len(t, 0, rec.got, must.Sprint("a2 is busy"))
	nomad.mu.Lock()
	nomad.util["g2"] = 0
	nomad.mu.Unlock()
	tick(13, 30)
	must.Eq(t, []string{"j"}, rec.got)
}

func TestMissingStatsAreNeverIdle(t *testing.T) {
	nomad := &fakeNomad{allocs: []*api.AllocationListStub{allocStub("a", "j", "running", "g1", "g2")},
		util: map[string]float64{"g1": 0}, mem: map[string]int64{}, procs: map[string]int64{}}
	now := t0
	s := NewService(Options{Source: nomad, Namespaces: nomad, Defaults: testPolicy(), Period: period, Now: func() time.Time { return now }})
	for n := 0; n < 20; n++ {
		now = t0.Add(time.Duration(n) * period)
		must.NoError(t, s.Once(context.Background()))
	}
	must.Len(t, 0, s.Detector().Candidates(), must.Sprint("g2 never reports: the allocation's samples are unknown"))
}

// TestWithdrawnNotice: a warned allocation busy again gets the withdrawal
// as a task event; one busy again before its warning gets nothing.
func TestWithdrawnNotice(t *testing.T) {
	nomad := &fakeNomad{allocs: []*api.AllocationListStub{allocStub("a1", "late", "running", "g1"), allocStub("a2", "early", "running", "g2")},
		util: map[string]float64{"g1": 0, "g2": 0}, mem: map[string]int64{"g1": 9000, "g2": 9000}, procs: map[string]int64{}}
	now := t0
	nf := &fakeNotifier{got: map[string][]string{}}
	s := NewService(Options{Source: nomad, Namespaces: nomad, Notifier: nf, Defaults: testPolicy(), Period: period, Now: func() time.Time { return now }})
	tick := func(n int) {
		now = t0.Add(time.Duration(n) * period)
		must.NoError(t, s.Once(context.Background()))
	}
	for n := 0; n <= 5; n++ { // suspect at 5
		tick(n)
	}
	nomad.mu.Lock()
	nomad.util["g2"] = 90 // busy again inside the grace, before its warning
	nomad.mu.Unlock()
	tick(6)
	tick(7) // a1 warned
	nomad.mu.Lock()
	nomad.util["g1"] = 90
	nomad.mu.Unlock()
	tick(8)
	must.Eq(t, map[string][]string{"a1": {"ALLOT_IDLE_WARNING;since=2026-11-30T12:00:00Z;due=2026-11-30T12:01:30Z;action=checkpoint;class=idle-held",
		ckptevent.IdleWithdrawn}}, nf.got)
}

func TestCkptTasks(t *testing.T) {
	job := func(tasks ...*api.Task) *api.Job {
		return &api.Job{TaskGroups: []*api.TaskGroup{{Name: ptr("other"), Tasks: []*api.Task{{Name: "x", Driver: "ckpt"}}},
			{Name: ptr("train"), Tasks: tasks}}}
	}
	cases := map[string]struct {
		alloc *api.Allocation
		want  []string
	}{
		"ckpt tasks of its group only": {alloc: &api.Allocation{TaskGroup: "train", Job: job(&api.Task{Name: "b", Driver: "ckpt"},
			&api.Task{Name: "sidecar", Driver: "raw_exec"}, &api.Task{Name: "a", Driver: "ckpt"})}, want: []string{"a", "b"}},
		"no ckpt task": {alloc: &api.Allocation{TaskGroup: "train", Job: job(&api.Task{Name: "s", Driver: "exec"})}},
		"no job":       {alloc: &api.Allocation{TaskGroup: "train"}},
		"nil":          {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.Eq(t, tc.want, ckptTasks(tc.alloc))
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestStandbyOnlyObserves: with HA, a governor that does not lead follows
// the ladder (candidates, metrics) but sends no task event, reclaims
// nothing and records nothing; once it leads, the due reclaim is carried
// out on its next period.
func TestStandbyOnlyObserves(t *testing.T) {
	nomad := &fakeNomad{allocs: []*api.AllocationListStub{allocStub("a1", "j", "running", "g1")},
		util: map[string]float64{"g1": 0}, mem: map[string]int64{"g1": 9000}, procs: map[string]int64{}}
	now, leading := t0, false
	rec, rc, nf := &fakeReclaimer{}, &fakeRecorder{}, &fakeNotifier{got: map[string][]string{}}
	s := NewService(Options{Source: nomad, Namespaces: nomad, Reclaimer: rec, Recorder: rc, Notifier: nf, Defaults: testPolicy(),
		Period: period, Now: func() time.Time { return now }, Leading: func() bool { return leading }})
	tick := func(from, to int) {
		for n := from; n <= to; n++ {
			now = t0.Add(time.Duration(n) * period)
			must.NoError(t, s.Once(context.Background()))
		}
	}
	tick(0, 10) // suspect 5, warned 7, due 9
	must.Eq(t, StepReclaim, s.Detector().Candidates()[0].Step)
	must.MapEmpty(t, nf.got)
	must.SliceEmpty(t, rec.got)
	must.SliceEmpty(t, rc.events)
	leading = true
	tick(11, 11)
	must.Eq(t, []string{"j"}, rec.got)
	must.Len(t, 1, rc.events)
	must.Eq(t, Reclaim, rc.events[0].Kind)
}

// blockingNotifier holds every Notify until release is closed.
type blockingNotifier struct {
	started chan string
	release chan struct{}
}

func (b *blockingNotifier) Notify(_ context.Context, allocID string, n ckptevent.IdleNotice) (int, error) {
	b.started <- n.Kind
	<-b.release
	return 1, nil
}

// TestRunNoticesDoNotStallTheLadder: under Run, task events go through a
// queue, so a Nomad that hangs on the signal call does not hold the next
// periods back (which would make the stop late).
func TestRunNoticesDoNotStallTheLadder(t *testing.T) {
	nomad := &fakeNomad{allocs: []*api.AllocationListStub{allocStub("a1", "j", "running", "g1")},
		util: map[string]float64{"g1": 0}, mem: map[string]int64{"g1": 9000}, procs: map[string]int64{}}
	bn := &blockingNotifier{started: make(chan string, 4), release: make(chan struct{})}
	pol := Policy{Window: 20 * time.Millisecond, ThresholdPct: 5, Grace: 20 * time.Millisecond, Notice: 10 * time.Millisecond, Action: ActionCheckpoint}
	s := NewService(Options{Source: nomad, Namespaces: nomad, Notifier: bn, Defaults: pol, Period: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case k := <-bn.started:
		must.Eq(t, ckptevent.IdleWarning, k)
	case <-time.After(10 * time.Second):
		t.Fatal("no warning sent within 10s")
	}
	// the warning's Notify is stuck; the ladder still reaches the end of the grace
	poll, deadline := time.NewTicker(time.Millisecond), time.After(10*time.Second)
	defer poll.Stop()
	for {
		if c := s.Detector().Candidates(); len(c) == 1 && c[0].Step == StepReclaim {
			break
		}
		select {
		case <-poll.C:
		case <-deadline:
			t.Fatalf("ladder stalled behind the stuck notice: %+v", s.Detector().Candidates())
		}
	}
	close(bn.release)
}

func TestGridStamp(t *testing.T) {
	cases := map[string]struct {
		after time.Duration // tick time − start
		want  time.Duration // stamp − start
	}{
		"on time":             {after: 3 * period, want: 3 * period},
		"a few µs late":       {after: 3*period + 7*time.Microsecond, want: 3 * period},
		"a few µs early":      {after: 3*period - 7*time.Microsecond, want: 3 * period},
		"after a dropped one": {after: 5*period + time.Millisecond, want: 5 * period},
		"first tick":          {after: period - time.Millisecond, want: period},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.Eq(t, t0.Add(tc.want), gridStamp(t0, t0.Add(tc.after), period))
		})
	}
}
