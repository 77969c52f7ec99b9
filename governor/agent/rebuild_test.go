package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
	twait "github.com/shoenig/test/wait"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/quota"
)

// listingSource lists a cluster whose index grows with every listing and
// streams nothing until its context ends.
type listingSource struct {
	mu       sync.Mutex
	listings int
	streams  []uint64
}

func (s *listingSource) Initial(context.Context) (*cluster.Initial, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listings++
	return &cluster.Initial{Index: uint64(100 * s.listings)}, nil
}

func (s *listingSource) Events(ctx context.Context, index uint64) (<-chan *cluster.Frame, error) {
	s.mu.Lock()
	s.streams = append(s.streams, index)
	s.mu.Unlock()
	ch := make(chan *cluster.Frame)
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}

func (s *listingSource) Namespaces(ctx context.Context, _ uint64) ([]*api.Namespace, uint64, error) {
	<-ctx.Done()
	return nil, 0, ctx.Err()
}

func (s *listingSource) JobExists(context.Context, string, string) (bool, error) { return true, nil }

func (s *listingSource) seen() (int, []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listings, append([]uint64(nil), s.streams...)
}

// TestRebuildRestartsTheWatcher: a new term's rebuild returns once the
// watcher has loaded a fresh listing and streams on from its index.
func TestRebuildRestartsTheWatcher(t *testing.T) {
	src := &listingSource{}
	store := cluster.NewStore(quota.NewBook([]string{"standard"}), nil)
	w := &cluster.Watcher{Source: src, Store: store, Log: hclog.NewNullLogger(), After: time.After, BackoffMax: time.Second}
	r := newWatchRunner(w)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := r.src.next()
	r.start(ctx)
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the first watcher never loaded a listing")
	}
	gen := store.Gen()
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	must.True(t, r.rebuild(wait, ctx))
	must.Greater(t, gen, store.Gen(), must.Sprint("the store was reset from the new listing"))
	// rebuild returns once the listing is loaded; the new watcher opens
	// its stream right after, so wait for it (make test saw [100] once).
	must.Wait(t, twait.InitialSuccess(twait.BoolFunc(func() bool { _, streams := src.seen(); return len(streams) == 2 }),
		twait.Timeout(10*time.Second), twait.Gap(time.Millisecond)))
	listings, streams := src.seen()
	must.Eq(t, 2, listings)
	must.Eq(t, []uint64{100, 200}, streams, must.Sprint("each watcher streams on from its own listing"))

	done, cancelDone := context.WithCancel(ctx)
	cancelDone()
	must.False(t, r.rebuild(done, ctx), must.Sprint("an ended term stops waiting"))
}

// TestRebuildBeforeStart: an HA term won before the agent starts the
// watcher (startHA runs first) rebuilds by starting it, and the agent's
// later start runs no second watcher. It panicked once (nil cancel),
// seen in TestE2E_HAFailover.
func TestRebuildBeforeStart(t *testing.T) {
	src := &listingSource{}
	store := cluster.NewStore(quota.NewBook([]string{"standard"}), nil)
	w := &cluster.Watcher{Source: src, Store: store, Log: hclog.NewNullLogger(), After: time.After, BackoffMax: time.Second}
	r := newWatchRunner(w)
	r.catchUp = nil // as when the barrier fails: the restart path
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	must.True(t, r.rebuild(wait, ctx))
	// As in TestRebuildRestartsTheWatcher: the stream opens right after
	// rebuild returns (make test saw nil once).
	must.Wait(t, twait.InitialSuccess(twait.BoolFunc(func() bool { _, streams := src.seen(); return len(streams) == 1 }),
		twait.Timeout(10*time.Second), twait.Gap(time.Millisecond)))
	listings, streams := src.seen()
	must.Eq(t, 1, listings)
	must.Eq(t, []uint64{100}, streams)
	r.mu.Lock()
	running := r.done
	r.mu.Unlock()
	r.start(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	must.True(t, running == r.done, must.Sprint("start left the running watcher alone"))
}
