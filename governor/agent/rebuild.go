package agent

import (
	"context"
	"sync"

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

// watchRunner runs the cluster watcher and restarts it on demand (a new
// term rebuilds the store from a fresh listing).
type watchRunner struct {
	w   *cluster.Watcher
	src *rebuildSource

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func newWatchRunner(w *cluster.Watcher) *watchRunner {
	src := &rebuildSource{Source: w.Source}
	w.Source = src
	return &watchRunner{w: w, src: src}
}

// start runs the watcher until parent ends or the next restart.
func (r *watchRunner) start(parent context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.startLocked(parent)
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

// rebuild restarts the watcher and waits until it has loaded a fresh full
// listing into the store (or ctx ends: false).
func (r *watchRunner) rebuild(ctx, parent context.Context) bool {
	r.mu.Lock()
	r.cancel()
	<-r.done
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
