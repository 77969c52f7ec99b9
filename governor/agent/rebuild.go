package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/allot-sh/allot/governor/cluster"
)

// rebuildSource is the watcher's source that tells when the watcher has
// just loaded a full listing into the store: the watcher calls Events
// right after Store.Reset of the listing it streams on from, so a waiter
// released there sees a store rebuilt from Nomad with no event lost in
// between (a listing loaded beside the running stream could overwrite
// newer events with older state).
type rebuildSource struct {
	cluster.Source

	mu      sync.Mutex
	waiters []chan struct{}
}

// Events releases the waiters, then streams.
func (s *rebuildSource) Events(ctx context.Context, index uint64) (<-chan *cluster.Frame, error) {
	s.mu.Lock()
	ws := s.waiters
	s.waiters = nil
	s.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
	return s.Source.Events(ctx, index)
}

// next returns a channel closed at the next full listing's load.
func (s *rebuildSource) next() <-chan struct{} {
	w := make(chan struct{})
	s.mu.Lock()
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	return w
}

// watchRunner runs the cluster watcher and brings its store up to
// Nomad's present on demand (a new term, before its first write): by the
// catch-up barrier (catchup.go) while the watcher streams, else by
// restarting it for a fresh listing.
type watchRunner struct {
	w   *cluster.Watcher
	src *rebuildSource
	// catchUp is the barrier (nil: a source that cannot tell Nomad's
	// index; every rebuild restarts the watcher).
	catchUp *barrier

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func newWatchRunner(w *cluster.Watcher) *watchRunner {
	r := &watchRunner{w: w}
	if ix, ok := w.Source.(nomadIndexes); ok {
		r.catchUp = &barrier{store: w.Store, streaming: w.Streaming, nomad: ix, after: time.After,
			quick: catchUpQuick, bound: catchUpBound}
	}
	r.src = &rebuildSource{Source: w.Source}
	w.Source = r.src
	return r
}

// start runs the watcher until parent ends or the next restart; a no-op
// when a rebuild already started it (an HA term can be won before the
// agent starts the watcher).
func (r *watchRunner) start(parent context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel == nil {
		r.startLocked(parent)
	}
}

func (r *watchRunner) startLocked(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	r.cancel, r.done = cancel, done
	go func() {
		defer close(done)
		r.w.Run(ctx)
	}()
}

// rebuild brings the store up to Nomad's present and reports true, or
// false when ctx ends first. A streaming watcher is caught up by the
// barrier; otherwise (or when the barrier fails) the watcher restarts.
// A ctx already ended (the term is over) reports false at once: the
// barrier could otherwise find the store caught up without looking at
// ctx (TestRebuildRestartsTheWatcher failed so under -race).
func (r *watchRunner) rebuild(ctx, parent context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	if r.catchUp != nil {
		start := time.Now()
		err := r.catchUp.wait(ctx)
		if err == nil {
			r.w.Log.Info("caught up with Nomad on the running event stream", "index", r.w.Store.Index(),
				"took", time.Since(start).Round(time.Millisecond))
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		log := r.w.Log.Warn
		if errors.Is(err, errNotStreaming) {
			log = r.w.Log.Info // starting (the first listing is not loaded yet) or resyncing
		}
		log("catch-up barrier failed; restarting the watcher for a full listing", "error", err)
	}
	return r.restart(ctx, parent)
}

// restart (re)starts the watcher and waits until it has loaded a fresh
// full listing into the store (or ctx ends: false).
func (r *watchRunner) restart(ctx, parent context.Context) bool {
	r.mu.Lock()
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
	loaded := r.src.next() // registered after the old watcher is gone
	r.startLocked(parent)
	r.mu.Unlock()
	select {
	case <-loaded:
		return true
	case <-ctx.Done():
		return false
	}
}
