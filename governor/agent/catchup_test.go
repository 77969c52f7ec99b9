package agent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/quota"
)

// fakeIndexes is Nomad as the barrier reads it.
type fakeIndexes struct {
	table, objects       uint64
	tableErr, objectsErr error
	mu                   sync.Mutex
	tableReads, objReads int
}

func (f *fakeIndexes) TableIndex(context.Context) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tableReads++
	return f.table, f.tableErr
}

func (f *fakeIndexes) ObjectIndex(context.Context) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objReads++
	return f.objects, f.objectsErr
}

func (f *fakeIndexes) reads() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tableReads, f.objReads
}

// fakeBounds is the barrier's clock: each bound it starts is announced on
// started and ends when the test fires it.
type fakeBounds struct {
	started chan time.Duration
	fire    chan time.Time
}

func newFakeBounds() *fakeBounds {
	return &fakeBounds{started: make(chan time.Duration, 4), fire: make(chan time.Time)}
}

func (c *fakeBounds) after(d time.Duration) <-chan time.Time {
	c.started <- d
	return c.fire
}

func storeAt(index uint64) *cluster.Store {
	s := cluster.NewStore(quota.NewBook([]string{"standard"}), nil)
	s.Reset(&cluster.Initial{Index: index})
	return s
}

func testBarrier(s *cluster.Store, nomad *fakeIndexes, c *fakeBounds, streaming bool) *barrier {
	return &barrier{store: s, streaming: func() bool { return streaming }, nomad: nomad, after: c.after,
		quick: catchUpQuick, bound: catchUpBound}
}

// TestBarrierWaitsForNomadsIndex: the barrier returns once the stream
// has delivered the frame at Nomad's index, not at an older one.
func TestBarrierWaitsForNomadsIndex(t *testing.T) {
	s, nomad, c := storeAt(10), &fakeIndexes{table: 15}, newFakeBounds()
	done := make(chan error)
	go func() { done <- testBarrier(s, nomad, c, true).wait(context.Background()) }()
	must.Eq(t, catchUpQuick, <-c.started) // waiting for 15
	must.NoError(t, s.Apply(&cluster.Frame{Index: 12}))
	must.NoError(t, s.Apply(&cluster.Frame{Index: 15}))
	must.NoError(t, <-done)
	must.Eq(t, 15, s.Index())
	tables, objects := nomad.reads()
	must.Eq(t, 1, tables)
	must.Eq(t, 0, objects, must.Sprint("the table index was reached: no listing"))
}

// TestBarrierOutcomes: idle clusters pass without a frame; an unhealthy
// watcher, failed reads and a store that does not get there fail (the
// caller restarts the watcher).
func TestBarrierOutcomes(t *testing.T) {
	readErr := errors.New("connection refused")
	cases := map[string]struct {
		store     uint64
		nomad     *fakeIndexes
		streaming bool
		// fire: how many bounds the test lets run out.
		fire    int
		want    error
		objects int
	}{
		"already there": {store: 20, nomad: &fakeIndexes{table: 20}, streaming: true},
		// Idle: the last event was at 20; garbage collection moved the
		// evaluations table to 25 with no event; nothing else will come.
		"idle cluster, tables moved by deletions": {store: 20, nomad: &fakeIndexes{table: 25, objects: 20},
			streaming: true, fire: 1, objects: 1},
		"not streaming":    {store: 20, nomad: &fakeIndexes{table: 20}, want: errNotStreaming},
		"table read fails": {store: 20, nomad: &fakeIndexes{tableErr: readErr}, streaming: true, want: readErr},
		"object read fails": {store: 20, nomad: &fakeIndexes{table: 25, objectsErr: readErr}, streaming: true,
			fire: 1, want: readErr, objects: 1},
		"stream stuck behind": {store: 20, nomad: &fakeIndexes{table: 30, objects: 28}, streaming: true,
			fire: 2, want: errBehind, objects: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, c := storeAt(tc.store), newFakeBounds()
			nomad := tc.nomad
			done := make(chan error)
			go func() { done <- testBarrier(s, nomad, c, tc.streaming).wait(context.Background()) }()
			for i := 0; i < tc.fire; i++ {
				<-c.started
				c.fire <- time.Now()
			}
			err := <-done
			if tc.want == nil {
				must.NoError(t, err)
			} else {
				must.ErrorIs(t, err, tc.want)
			}
			_, objects := nomad.reads()
			must.Eq(t, tc.objects, objects)
			must.Eq(t, tc.store, s.Index(), must.Sprint("the barrier loads nothing into the store"))
		})
	}
}

// TestBarrierEndsWithTheTerm: an ended term stops the wait.
func TestBarrierEndsWithTheTerm(t *testing.T) {
	s, nomad, c := storeAt(10), &fakeIndexes{table: 15}, newFakeBounds()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- testBarrier(s, nomad, c, true).wait(ctx) }()
	<-c.started
	cancel()
	must.ErrorIs(t, <-done, context.Canceled)
}

// indexedSource is a listingSource that tells Nomad's indexes.
type indexedSource struct {
	listingSource
	fakeIndexes
}

// TestRebuildCatchesUpOrRestarts: a term's rebuild on a streaming watcher
// is the barrier (no second listing); when the barrier fails it restarts
// the watcher for a fresh listing.
func TestRebuildCatchesUpOrRestarts(t *testing.T) {
	cases := map[string]struct {
		table, objects uint64
		listings       int
	}{
		"caught up on the stream": {table: 100, objects: 100, listings: 1},
		"behind: restart":         {table: 150, objects: 150, listings: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := &indexedSource{fakeIndexes: fakeIndexes{table: tc.table, objects: tc.objects}}
			store := cluster.NewStore(quota.NewBook([]string{"standard"}), nil)
			w := &cluster.Watcher{Source: src, Store: store, Log: hclog.NewNullLogger(), After: time.After, BackoffMax: time.Second}
			r := newWatchRunner(w)
			must.NotNil(t, r.catchUp)
			expired := make(chan time.Time)
			close(expired)
			r.catchUp.after = func(time.Duration) <-chan time.Time { return expired } // bounds end at once
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := r.src.next()
			r.start(ctx)
			<-first // listed at 100, streaming
			must.Wait(t, wait.InitialSuccess(wait.BoolFunc(w.Streaming), wait.Timeout(10*time.Second), wait.Gap(time.Millisecond)))
			wait, stop := context.WithTimeout(ctx, 10*time.Second)
			defer stop()
			must.True(t, r.rebuild(wait, ctx))
			listings, _ := src.seen()
			must.Eq(t, tc.listings, listings)
		})
	}
}
