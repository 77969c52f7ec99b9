package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/quota"
)

// TestReadYourWrites: a job the proxy holds is in the queue at once, at
// the position it was told; one it admits is in its tenant's usage at
// once; Nomad refusing the write takes either back; the next plan that
// sees the job replaces the provisional entry.
func TestReadYourWrites(t *testing.T) {
	r, _ := newReconciler(t, gpuJob("old", 3, true))
	r.Cycle(context.Background())
	must.SliceLen(t, 0, r.Latest().Queue, must.Sprint("old was admitted"))
	usage := func() int64 { return r.Latest().Tenants[0].Usage["gpu"] }
	must.Eq(t, 3, usage())

	v, _ := r.Reserve(cluster.ConvertJob(gpuJob("small", 1, false)))
	must.True(t, v.Admitted)
	must.Eq(t, 4, usage(), must.Sprint("the admission counts at once"))

	v, undo := r.Reserve(cluster.ConvertJob(gpuJob("big", 4, false)))
	must.False(t, v.Admitted)
	q := r.Latest().Queue
	must.SliceLen(t, 1, q)
	must.Eq(t, "big", q[0].JobID)
	must.Eq(t, v.Position, q[0].Position)
	must.Eq(t, 1, r.Latest().Tenants[0].Queued)
	v2, _ := r.Reserve(cluster.ConvertJob(gpuJob("big2", 4, false)))
	must.Eq(t, 2, v2.Position, must.Sprint("behind the job held just before"))
	must.Eq(t, 2, v2.Total)
	must.SliceLen(t, 2, r.Latest().Queue)
	r.dropProvisional("ml/big2")
	undo()
	must.SliceLen(t, 0, r.Latest().Queue, must.Sprint("Nomad refused the write: not queued"))
}

// TestProvisionalInsertRenumbers: held jobs inserted into a plan's queue
// shift the positions behind them, overall and within their tenant,
// without touching the plan readers share.
func TestProvisionalInsertRenumbers(t *testing.T) {
	pl := &engine.Plan{Verdicts: map[string]*engine.Verdict{}, Queue: []engine.Verdict{
		{Namespace: "a", JobID: "1", Position: 1, TenantPosition: 1},
		{Namespace: "b", JobID: "2", Position: 2, TenantPosition: 1},
		{Namespace: "a", JobID: "3", Position: 3, TenantPosition: 2},
	}}
	p := provisional{entries: map[string]provEntry{"a/new": {v: engine.Verdict{Namespace: "a", JobID: "new", Position: 2, TenantPosition: 2}}}}
	m := p.merge(pl)
	var got []string
	for _, v := range m.Queue {
		got = append(got, v.JobID)
		must.Eq(t, len(got), v.Position)
	}
	must.Eq(t, []string{"1", "new", "2", "3"}, got)
	must.Eq(t, 3, m.Queue[3].TenantPosition)
	must.Eq(t, 2, m.Queue[1].TenantPosition)
	must.SliceLen(t, 3, pl.Queue)
	must.Eq(t, 3, pl.Queue[2].Position)
	must.NotNil(t, m.Verdicts["a/new"])
	must.Nil(t, pl.Verdicts["a/new"])
}

// TestProvisionalMergeMany: several held entries merge in one pass, each
// at its answered position (a tie: the later answer first; a position
// past the end: last); positions and tenant positions run 1..n; admitted
// entries add to usage; every queued job's verdict is its shifted queue
// entry; the shared plan is untouched.
func TestProvisionalMergeMany(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	pl := &engine.Plan{Verdicts: map[string]*engine.Verdict{}, Tenants: []engine.TenantStatus{
		{Tenant: named("a"), Queued: 2, Usage: quota.Vector{"gpu": 1}}, {Tenant: named("b"), Queued: 2}}}
	for i, id := range []string{"a/1", "b/2", "a/3", "b/4"} {
		ns, job, _ := strings.Cut(id, "/")
		v := engine.Verdict{Namespace: ns, JobID: job, Position: i + 1, TenantPosition: i/2 + 1}
		pl.Queue = append(pl.Queue, v)
		pl.Verdicts[id] = &pl.Queue[i]
	}
	held := func(ns, id string, pos, sec int) provEntry {
		return provEntry{at: at.Add(time.Duration(sec) * time.Second), v: engine.Verdict{Namespace: ns, JobID: id, Position: pos}}
	}
	p := provisional{entries: map[string]provEntry{
		"b/x":    held("b", "x", 1, 0),
		"a/y":    held("a", "y", 3, 1),
		"a/z":    held("a", "z", 3, 2), // answered after y, at the same position: ahead of y
		"b/far":  held("b", "far", 99, 3),
		"a/runs": {admitted: true, at: at, use: quota.Vector{"gpu": 2}, v: engine.Verdict{Namespace: "a", JobID: "runs"}},
	}}
	m := p.merge(pl)
	var got []string
	tenantPos := map[string]int{}
	for i, v := range m.Queue {
		got = append(got, v.Namespace+"/"+v.JobID)
		tenantPos[v.Namespace]++
		must.Eq(t, i+1, v.Position)
		must.Eq(t, tenantPos[v.Namespace], v.TenantPosition)
		must.Eq(t, &m.Queue[i], m.Verdicts[v.Namespace+"/"+v.JobID], must.Sprint("why shows the queue's position"))
	}
	must.Eq(t, []string{"b/x", "a/1", "a/z", "a/y", "b/2", "a/3", "b/4", "b/far"}, got)
	must.Eq(t, 4, m.Tenants[0].Queued)
	must.Eq(t, 4, m.Tenants[1].Queued)
	must.Eq(t, 3, m.Tenants[0].Usage["gpu"])
	must.Eq(t, 1, pl.Tenants[0].Usage["gpu"], must.Sprint("the shared plan's usage is not changed"))
	must.Eq(t, 2, pl.Tenants[0].Queued)
	must.SliceLen(t, 4, pl.Queue)
	must.Eq(t, 2, pl.Verdicts["b/2"].Position)
	must.Nil(t, pl.Verdicts["b/x"])
}

func named(ns string) engine.Tenant {
	return engine.Tenant{Tenant: quota.Tenant{Namespace: ns}}
}

// blockingJobs is a job API whose writes wait until release is closed.
type blockingJobs struct {
	*memJobs
	writing chan struct{}
	release chan struct{}
}

func (b *blockingJobs) RegisterOpts(j *api.Job, o *api.RegisterOptions, q *api.WriteOptions) (*api.JobRegisterResponse, *api.WriteMeta, error) {
	select {
	case b.writing <- struct{}{}:
	default:
	}
	<-b.release
	return b.memJobs.RegisterOpts(j, o, q)
}

// TestProxyAdmitsWhileCycleWrites: while a cycle writes its admissions to
// Nomad the proxy still decides (the admission lock is not held), and
// the capacity the cycle admitted is not promised again.
func TestProxyAdmitsWhileCycleWrites(t *testing.T) {
	r, mem := newReconciler(t, gpuJob("a", 3, true))
	bj := &blockingJobs{memJobs: mem, writing: make(chan struct{}, 1), release: make(chan struct{})}
	r.Actuator.Jobs = bj
	done := make(chan *engine.Plan)
	go func() { done <- r.Cycle(context.Background()) }()
	<-bj.writing
	verdicts := make(chan [2]Verdict, 1)
	go func() {
		// y first: once x is held for capacity, y would be left to the
		// next cycle (heldSinceAhead).
		y, _ := r.Reserve(cluster.ConvertJob(gpuJob("y", 1, false)))
		x, _ := r.Reserve(cluster.ConvertJob(gpuJob("x", 2, false)))
		verdicts <- [2]Verdict{x, y}
	}()
	select {
	case v := <-verdicts:
		must.False(t, v[0].Admitted, must.Sprint("a's 3 GPUs are reserved while the cycle writes"))
		must.True(t, v[1].Admitted)
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy could not decide while the cycle wrote to Nomad")
	}
	close(bj.release)
	p := <-done
	must.SliceLen(t, 1, p.Decisions)
	j, _ := r.Store.Job("ml", "a")
	must.Eq(t, engine.Admitted, j.State)
}

// TestProvisionalPositionFollowsQueueOrder: a job's position counts the
// jobs the proxy held since the latest plan in the queue order in force.
// Team-a (share 1) holds a high job; team-b's (share 0) low job stands
// behind it by class, ahead of it by share.
func TestProvisionalPositionFollowsQueueOrder(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for order, want := range map[string]int{engine.QueueOrderClass: 2, engine.QueueOrderShare: 1} {
		t.Run(order, func(t *testing.T) {
			r := &Reconciler{Config: engine.Config{QueueOrder: order, Classes: map[string]engine.Class{
				"high": {Priority: 70, Preemptible: true}, "low": {Priority: 30, Preemptible: true}}}}
			r.latest = &engine.Plan{Verdicts: map[string]*engine.Verdict{}, Tenants: []engine.TenantStatus{
				{Tenant: named("team-a"), DominantShare: 1}, {Tenant: named("team-b")}}}
			r.prov.entries = map[string]provEntry{"team-a/next": {at: at, v: engine.Verdict{Namespace: "team-a", JobID: "next", Class: "high", QueuedAt: at, Position: 1}}}
			small := &engine.Job{Namespace: "team-b", ID: "small", QueuedAt: at.Add(time.Second)}
			overall, tenant, total := r.position(small, "low")
			must.Eq(t, want, overall)
			must.Eq(t, 1, tenant)
			must.Eq(t, 2, total)
		})
	}
}
