package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/quota"
)

// memJobs is an in-memory job API for the actuator; writes get Nomad's
// SubmitTime.
type memJobs struct {
	jobs map[string]*api.Job
	now  func() time.Time
}

func (m *memJobs) Info(id string, q *api.QueryOptions) (*api.Job, *api.QueryMeta, error) {
	j := *m.jobs[q.Namespace+"/"+id]
	return &j, nil, nil
}

func (m *memJobs) RegisterOpts(j *api.Job, o *api.RegisterOptions, q *api.WriteOptions) (*api.JobRegisterResponse, *api.WriteMeta, error) {
	next := *j.JobModifyIndex + 1
	j.JobModifyIndex = &next
	j.SubmitTime = ptr(m.now().UnixNano())
	m.jobs[q.Namespace+"/"+*j.ID] = j
	return &api.JobRegisterResponse{JobModifyIndex: next}, nil, nil
}

func (m *memJobs) Deregister(id string, purge bool, q *api.WriteOptions) (string, *api.WriteMeta, error) {
	j := *m.jobs[q.Namespace+"/"+id]
	j.Stop = ptr(true)
	m.jobs[q.Namespace+"/"+id] = &j
	return "", nil, nil
}

func ptr[T any](v T) *T { return &v }

// testNow is the reconciler's clock in these tests.
func testNow() time.Time { return time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC) }

var testSealer = func() *jobmeta.Sealer {
	s, err := jobmeta.NewSealer([]byte("reconcile-test-key-reconcile-test"))
	if err != nil {
		panic(err)
	}
	return s
}()

// gpuJob is a job asking for gpus GPUs; a held one was held by the
// governor (sealed).
func gpuJob(id string, gpus uint64, held bool) *api.Job {
	j := &api.Job{ID: ptr(id), Namespace: ptr("ml"), Type: ptr("batch"), Stop: ptr(held), JobModifyIndex: ptr(uint64(3)),
		Meta: map[string]string{}, TaskGroups: []*api.TaskGroup{{Name: ptr("g"), Count: ptr(1), Tasks: []*api.Task{{Name: "t",
			Resources: &api.Resources{Devices: []*api.RequestedDevice{{Name: "gpu", Count: ptr(gpus)}}}}}}}}
	j.SubmitTime = ptr(testNow().Add(-time.Minute).UnixNano())
	if held {
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := testSealer.Hold(j, jobmeta.Record{}, jobmeta.Stamp{Now: at}); err != nil {
			panic(err)
		}
		j.SubmitTime = ptr(at.UnixNano())
	}
	return j
}

// testNode is a ready node with 4 GPUs.
func testNode() *api.Node {
	return &api.Node{ID: "n1", NodePool: "default", Status: "ready", SchedulingEligibility: "eligible",
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 4000}, Memory: api.NodeMemoryResources{MemoryMB: 4096},
			Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H200",
				Instances: []*api.NodeDevice{{ID: "a", Healthy: true}, {ID: "b", Healthy: true}, {ID: "c", Healthy: true}, {ID: "d", Healthy: true}}}}}}
}

func newReconciler(t *testing.T, jobs ...*api.Job) (*Reconciler, *memJobs) {
	store := cluster.NewStore(quota.NewBook([]string{"standard", "low", "production"}), nil)
	store.UseSealer(testSealer)
	store.SetNamespaces([]*api.Namespace{{Name: "ml", Meta: map[string]string{"allot.quota.gpu": "4"}}})
	node := testNode()
	mem := &memJobs{jobs: map[string]*api.Job{}, now: testNow}
	for _, j := range jobs {
		mem.jobs["ml/"+*j.ID] = j
	}
	store.Reset(&cluster.Initial{Nodes: []*api.Node{node}, Jobs: jobs})
	r := &Reconciler{Store: store, Config: engine.Config{StarvationTimeout: time.Hour, Classes: map[string]engine.Class{
		"standard": {Priority: 50, Preemptible: true}, "low": {Priority: 30, Preemptible: true}, "production": {Priority: 90, Restricted: true}}},
		Metrics: metrics.New(), Log: hclog.NewNullLogger(), Now: testNow, Interval: time.Hour,
		Actuator: &actuate.Actuator{Jobs: mem, Store: store, Sealer: testSealer, Log: hclog.NewNullLogger(), Now: testNow}}
	return r, mem
}

func TestCycleAdmitsAndRecords(t *testing.T) {
	r, mem := newReconciler(t, gpuJob("a", 2, true), gpuJob("b", 4, true))
	p := r.Cycle(context.Background())
	must.SliceLen(t, 1, p.Decisions)
	rec, err := testSealer.Verify(mem.jobs["ml/a"])
	must.NoError(t, err)
	must.True(t, rec.Admitted())
	must.True(t, *mem.jobs["ml/b"].Stop)
	must.Eq(t, p, r.Latest())
	must.Eq(t, 1.0, testutil.ToFloat64(r.Metrics.AdmittedTotal.WithLabelValues("ml", "queue")))
	must.Eq(t, 1.0, testutil.ToFloat64(r.Metrics.Pending.WithLabelValues("ml")))
	j, _ := r.Store.Job("ml", "a")
	must.Eq(t, engine.Admitted, j.State, must.Sprint("the store learns of the write at once"))
	must.SliceEmpty(t, r.Cycle(context.Background()).Decisions, must.Sprint("nothing left to do"))
}

func TestReserveHoldsCapacityUntilUndone(t *testing.T) {
	r, _ := newReconciler(t)
	r.Cycle(context.Background())
	job := func(id string) *engine.Job {
		return cluster.ConvertJob(gpuJob(id, 3, false))
	}
	v, undo := r.Reserve(job("x"))
	must.True(t, v.Admitted)
	v2, _ := r.Reserve(job("y"))
	must.False(t, v2.Admitted, must.Sprint("x's reservation counts"))
	must.StrContains(t, v2.Reason, "needs 3 gpu; tenant ml uses 3 of quota 4")
	must.Eq(t, 1, v2.Position)
	undo()
	v3, _ := r.Reserve(job("y"))
	must.True(t, v3.Admitted, must.Sprint("undo gave the capacity back"))
}

// TestCycleCarriesTheClaimClock: a claim's start (Plan.Claims) passes
// from each cycle's plan to the next cycle's snapshot, so the reclaim
// wait limit counts from when the job became a claim.
func TestCycleCarriesTheClaimClock(t *testing.T) {
	r, _ := newReconciler(t, gpuJob("a", 4, true), gpuJob("b", 4, true))
	r.Store.SetNamespaces([]*api.Namespace{{Name: "ml", Meta: map[string]string{"allot.quota.gpu": "8"}}})
	now := testNow()
	r.Now = func() time.Time { return now }
	first := r.Cycle(context.Background())
	must.Eq(t, map[string]time.Time{"ml/b": now}, first.Claims,
		must.Sprint("b fits no node while ml stays within its nominal quota: a claim"))
	start := now
	now = now.Add(time.Hour)
	must.Eq(t, map[string]time.Time{"ml/b": start}, r.Cycle(context.Background()).Claims)
}

// TestCycleCarriesTheTakeBackMemory: which tenants' preemptions requeued
// whose jobs (Plan.Taken) passes from each cycle's plan to the next
// cycle's snapshot while it is at most 5 minutes old, so the take-back
// rule does not rest on allot.preempted-by alone.
func TestCycleCarriesTheTakeBackMemory(t *testing.T) {
	r, _ := newReconciler(t, gpuJob("a", 2, true))
	now := testNow()
	r.Now = func() time.Time { return now }
	took := now.Add(-time.Minute)
	r.taken = map[string]map[string]time.Time{"ml": {"cv": took}}
	must.Eq(t, map[string]map[string]time.Time{"ml": {"cv": took}}, r.Cycle(context.Background()).Taken)
	now = now.Add(3 * time.Minute)
	must.Eq(t, map[string]map[string]time.Time{"ml": {"cv": took}}, r.Cycle(context.Background()).Taken,
		must.Sprint("the plan's record came back with the next snapshot"))
	now = now.Add(2 * time.Minute)
	must.MapEmpty(t, r.Cycle(context.Background()).Taken, must.Sprint("older than 5 minutes: dropped"))
}

// TestCycleCarriesTheMoveHolds: the nodes a move emptied for its head
// (Plan.MoveHolds) pass from each cycle's plan to the next cycle's
// snapshot while the head is queued.
func TestCycleCarriesTheMoveHolds(t *testing.T) {
	r, _ := newReconciler(t, gpuJob("a", 4, true), gpuJob("b", 4, true))
	r.Store.SetNamespaces([]*api.Namespace{{Name: "ml", Meta: map[string]string{"allot.quota.gpu": "8"}}})
	now := testNow()
	r.Now = func() time.Time { return now }
	r.Cycle(context.Background())
	hold := engine.MoveHold{At: now, Nodes: []string{"n1"}}
	r.moveHolds = map[string]engine.MoveHold{"ml/b": hold}
	now = now.Add(time.Minute)
	must.Eq(t, map[string]engine.MoveHold{"ml/b": hold}, r.Cycle(context.Background()).MoveHolds, must.Sprint("b is still queued"))
	now = now.Add(time.Minute)
	must.Eq(t, map[string]engine.MoveHold{"ml/b": hold}, r.Cycle(context.Background()).MoveHolds,
		must.Sprint("the plan's hold came back with the next snapshot"))
}
