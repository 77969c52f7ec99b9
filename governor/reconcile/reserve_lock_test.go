package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
)

// TestReserveHoldsWhileCycleDecides: while a cycle holds the admission
// lock, a submission that will be held is answered at once (it promises
// nothing) and is in the queue; one that would be admitted waits for the
// lock and is decided again under it, so the capacity the cycle reserved
// meanwhile is not promised twice.
func TestReserveHoldsWhileCycleDecides(t *testing.T) {
	r, _ := newReconciler(t)
	r.Cycle(context.Background())
	r.mu.Lock() // a cycle deciding
	held := make(chan Verdict, 1)
	go func() {
		v, _ := r.Reserve(cluster.ConvertJob(gpuJob("big", 5, false)))
		held <- v
	}()
	select {
	case v := <-held:
		must.False(t, v.Admitted)
		must.Eq(t, 1, v.Position)
	case <-time.After(10 * time.Second):
		r.mu.Unlock()
		t.Fatal("a submission to be held waited for the cycle")
	}
	must.Eq(t, "big", r.Latest().Queue[0].JobID, must.Sprint("read-your-writes"))

	admitted := make(chan Verdict, 1)
	go func() {
		v, _ := r.Reserve(cluster.ConvertJob(gpuJob("small", 2, false)))
		admitted <- v
	}()
	// The cycle admits a held job onto 3 of the 4 GPUs before letting go.
	taken := cluster.ConvertJob(gpuJob("cycle", 3, false))
	taken.State = engine.Admitted
	r.Store.PutEngineJob(taken)
	r.dropBase()
	r.mu.Unlock()
	select {
	case v := <-admitted:
		must.False(t, v.Admitted, must.Sprint("decided again under the lock: the cycle's admission counts"))
		must.StrContains(t, v.Reason, "tenant ml uses 3 of quota 4")
	case <-time.After(10 * time.Second):
		t.Fatal("the admission never got the lock")
	}
}

// TestReserveStarvingHeadKeepsNothing: a job the base admits but a
// starving head holds back leaves no usage in the cached base.
func TestReserveStarvingHeadKeepsNothing(t *testing.T) {
	r, _ := newReconciler(t)
	r.Cycle(context.Background())
	r.setLatest(&engine.Plan{Starving: map[string]string{"default": "ml/head"}}, &engine.Snapshot{})
	v, _ := r.Reserve(cluster.ConvertJob(gpuJob("x", 2, false)))
	must.False(t, v.Admitted)
	must.StrContains(t, v.Reason, "waiting behind ml/head")
	r.setLatest(&engine.Plan{}, &engine.Snapshot{}) // the head was admitted
	v, _ = r.Reserve(cluster.ConvertJob(gpuJob("y", 4, false)))
	must.True(t, v.Admitted, must.Sprintf("x, held, holds none of the 4 GPUs: %s", v.Reason))
}

// While queued jobs of its pool wait for capacity, a submission that fits
// is held for the next cycle, which admits in queue order (and keeps no
// usage); once none waits, the next one is admitted at once.
func TestReserveLeavesItToTheCycleWhileOthersWait(t *testing.T) {
	r, _ := newReconciler(t)
	r.Cycle(context.Background())
	r.setLatest(&engine.Plan{Waiting: map[string]engine.PoolWait{"default": {Count: 3, First: "ml/big"}}}, &engine.Snapshot{})
	v, _ := r.Reserve(cluster.ConvertJob(gpuJob("x", 2, false)))
	must.False(t, v.Admitted)
	must.StrContains(t, v.Reason, "3 queued jobs of node pool default wait for capacity (first ml/big)")
	r.setLatest(&engine.Plan{}, &engine.Snapshot{})
	v, _ = r.Reserve(cluster.ConvertJob(gpuJob("y", 4, false)))
	must.True(t, v.Admitted, must.Sprintf("x, held, holds none of the 4 GPUs: %s", v.Reason))
}

// An update of an admitted job is not held back by jobs waiting for
// capacity: it takes no new place in the queue (and an update of a
// running job that is not admitted is refused, not held).
func TestReserveUpdateIgnoresWaiters(t *testing.T) {
	r, _ := newReconciler(t, gpuJob("run", 2, true))
	r.Cycle(context.Background())
	j, ok := r.Store.Job("ml", "run")
	must.True(t, ok)
	must.Eq(t, engine.Admitted, j.State)
	r.setLatest(&engine.Plan{Waiting: map[string]engine.PoolWait{"default": {Count: 3, First: "ml/big"}}}, &engine.Snapshot{})
	v, _ := r.Reserve(cluster.ConvertJob(gpuJob("run", 2, false)))
	must.True(t, v.Admitted, must.Sprintf("an update of an admitted job: %s", v.Reason))
	v, _ = r.Reserve(cluster.ConvertJob(gpuJob("new", 1, false)))
	must.False(t, v.Admitted, must.Sprint("a new job still waits for the cycle"))
}

// Jobs the proxy held for capacity since the latest plan hold a later
// submission back like the plan's own waiting jobs (the plan does not
// know them yet), until a plan decided about them or Nomad refused them;
// a job held for a reason capacity cannot cure does not.
func TestReserveLeavesItToTheCycleWhileJobsHeldSinceWait(t *testing.T) {
	r, _ := newReconciler(t, gpuJob("run", 3, true))
	r.Cycle(context.Background())
	z := func() Verdict { return r.Evaluate(cluster.ConvertJob(gpuJob("z", 1, false))) }
	huge, _ := r.Reserve(cluster.ConvertJob(gpuJob("huge", 64, false)))
	must.False(t, huge.Admitted)
	must.True(t, z().Admitted, must.Sprintf("a job that fits no node waits for no capacity: %s", z().Reason))

	x, undo := r.Reserve(cluster.ConvertJob(gpuJob("x", 2, false)))
	must.False(t, x.Admitted)
	must.StrContains(t, x.Reason, "quota: needs 2 gpu")
	v := z()
	must.False(t, v.Admitted)
	must.StrContains(t, v.Reason, "1 jobs of node pool default held since the last cycle wait for capacity")
	undo()
	must.True(t, z().Admitted, must.Sprintf("Nomad refused x: %s", z().Reason))

	x, _ = r.Reserve(cluster.ConvertJob(gpuJob("x", 2, false)))
	must.False(t, x.Admitted)
	must.False(t, z().Admitted)
	r.setLatest(&engine.Plan{}, &engine.Snapshot{Jobs: []*engine.Job{cluster.ConvertJob(gpuJob("x", 2, false))}})
	must.True(t, z().Admitted, must.Sprintf("a plan decided about x: %s", z().Reason))
}

// A submission that would borrow from a cohort whose lending a starved
// head holds waits for the next cycle (engine Plan.BorrowHeldBy), also
// when no job of its node pool waits (the head may be in another pool);
// one within its nominal quota does not, and once the hold is gone the
// borrower is admitted at once.
func TestReserveLeavesABorrowerToTheCycleWhileItsCohortIsHeld(t *testing.T) {
	r, _ := newReconciler(t)
	r.Store.SetNamespaces([]*api.Namespace{{Name: "ml", Meta: map[string]string{"allot.quota.gpu": "2"}},
		{Name: "cv", Meta: map[string]string{"allot.quota.gpu": "2"}}})
	r.Cycle(context.Background())
	r.setLatest(&engine.Plan{BorrowHolds: []engine.BorrowHold{{Job: "cv/head", Cohort: "default"}}}, &engine.Snapshot{})
	eval := func(id string, gpus uint64) Verdict { return r.Evaluate(cluster.ConvertJob(gpuJob(id, gpus, false))) }
	v := eval("borrower", 3)
	must.False(t, v.Admitted)
	must.StrContains(t, v.Reason, "would borrow from cohort default, whose lending is held for cv/head")
	v = eval("own", 2)
	must.True(t, v.Admitted, must.Sprintf("within its nominal quota: %s", v.Reason))
	r.setLatest(&engine.Plan{}, &engine.Snapshot{}) // the head was admitted
	v = eval("borrower", 3)
	must.True(t, v.Admitted, must.Sprintf("no hold: %s", v.Reason))
}
