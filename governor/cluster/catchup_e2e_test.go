//go:build e2e

package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
)

// TestE2E_CatchUpIndexes checks, on a real Nomad 1.6.1, what the catch-up
// barrier of a new HA leader relies on (governor/agent/catchup.go): a
// streaming watcher's store reaches Nomad's table index once the stream
// delivered the latest change; and after a garbage collection (deletes
// that publish no event) the table index stays above every event the
// stream delivers, while the newest ModifyIndex of what Nomad still holds
// is one the store has reached: the idle-cluster case.
func TestE2E_CatchUpIndexes(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Clients: []testcluster.ClientSpec{{Name: "c1"}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &NomadSource{Client: c.API}
	store := NewStore(nil, nil)
	w := &Watcher{Source: src, Store: store, Log: hclog.NewNullLogger(), After: time.After, BackoffMax: time.Second}
	go w.Run(ctx)
	c.Eventually(time.Minute, "the watcher streaming", func() error {
		if !w.Streaming() {
			return errNotYet
		}
		return nil
	})

	job := api.NewBatchJob("quick", "quick", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("t", "raw_exec").SetConfig("command", "/bin/true")
	task.Resources = &api.Resources{CPU: pointer(100), MemoryMB: pointer(32)}
	job.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	_, _, err := c.API.Jobs().Register(job, nil)
	must.NoError(t, err)
	c.Eventually(time.Minute, "the job's allocation complete", func() error {
		allocs, _, err := c.API.Jobs().Allocations("quick", true, nil)
		if err != nil {
			return err
		}
		if len(allocs) == 0 || allocs[0].ClientStatus != api.AllocClientStatusComplete {
			return errNotYet
		}
		return nil
	})
	caughtUp(ctx, t, store, src.TableIndex)

	// Purge the job and collect everything terminal: the deletions move
	// the tables' indexes without an event.
	_, _, err = c.API.Jobs().Deregister("quick", true, nil)
	must.NoError(t, err)
	caughtUp(ctx, t, store, src.TableIndex)
	must.NoError(t, c.API.System().GarbageCollect())
	c.Eventually(time.Minute, "the evaluations collected", func() error {
		evals, _, err := c.API.Evaluations().List(&api.QueryOptions{Namespace: "*"})
		if err != nil {
			return err
		}
		if len(evals) > 0 {
			return fmt.Errorf("%d evaluations left", len(evals))
		}
		return nil
	})
	objects := caughtUp(ctx, t, store, src.ObjectIndex)
	table, err := src.TableIndex(ctx)
	must.NoError(t, err)
	must.Greater(t, store.Index(), table, must.Sprint("the collection moved the tables past every event the stream delivered"))
	t.Logf("after the collection: tables at %d, store at %d, objects at %d", table, store.Index(), objects)
}

// caughtUp waits until the store reaches the index read returns, and
// returns it.
func caughtUp(ctx context.Context, t *testing.T, store *Store, read func(context.Context) (uint64, error)) uint64 {
	t.Helper()
	idx, err := read(ctx)
	must.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	must.True(t, store.AwaitIndex(wctx, idx), must.Sprintf("the store (at %d) reaches Nomad's index %d", store.Index(), idx))
	return idx
}
