package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ErrStreamClosed is returned when the event stream ends without error.
var ErrStreamClosed = errors.New("event stream closed")

// Watcher keeps a Store in step with Nomad: a full listing, then the event
// stream from the listing's index; after any error or gap, a full resync
// with exponential back-off. Namespace meta is refreshed with blocking
// queries.
type Watcher struct {
	Source Source
	Store  *Store
	Log    hclog.Logger
	// After is the clock used for back-off (time.After in production).
	After func(time.Duration) <-chan time.Time
	// BackoffMax caps the back-off between resyncs.
	BackoffMax time.Duration
	// Resyncs counts full resyncs, for metrics; may be nil.
	Resyncs func()

	// streaming is true while the store follows an open event stream
	// from a listing the watcher loaded (Streaming).
	streaming atomic.Bool
}

// Streaming tells whether the watcher follows the event stream now: it
// loaded a full listing and the stream it opened after it has not ended
// or failed since. Only then do the store's contents move with Nomad's
// present (a catch-up barrier can wait on them).
func (w *Watcher) Streaming() bool { return w.streaming.Load() }

// Run follows the cluster until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	go w.runNamespaces(ctx)
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		streamed, err := w.syncAndStream(ctx)
		if ctx.Err() != nil {
			return
		}
		backoff = nextBackoff(backoff, streamed, w.BackoffMax)
		w.Log.Warn("cluster watch interrupted, resyncing", "error", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-w.After(backoff):
		}
	}
}

// nextBackoff doubles the back-off from 250ms up to max; a stream that
// delivered frames resets it.
func nextBackoff(cur time.Duration, streamed bool, max time.Duration) time.Duration {
	switch {
	case streamed:
		return 250 * time.Millisecond
	case cur == 0:
		return 250 * time.Millisecond
	case cur*2 > max:
		return max
	}
	return cur * 2
}

// syncAndStream lists the cluster, then applies the event stream until it
// fails. It reports whether any frame was applied.
func (w *Watcher) syncAndStream(ctx context.Context) (bool, error) {
	if w.Resyncs != nil {
		w.Resyncs()
	}
	in, err := w.Source.Initial(ctx)
	if err != nil {
		return false, fmt.Errorf("full resync: %w", err)
	}
	w.Store.Reset(in)
	w.Log.Debug("cluster resynced", "index", in.Index, "nodes", len(in.Nodes), "allocs", len(in.Allocs), "jobs", len(in.Jobs))
	sctx, cancel := context.WithCancel(ctx)
	defer cancel() // the api's stream goroutine ends with the context
	frames, err := w.Source.Events(sctx, in.Index)
	if err != nil {
		return false, err
	}
	w.streaming.Store(true)
	defer w.streaming.Store(false)
	streamed := false
	for {
		select {
		case <-ctx.Done():
			return streamed, ctx.Err()
		case f, ok := <-frames:
			if !ok {
				return streamed, ErrStreamClosed
			}
			if f.Err != nil {
				return streamed, fmt.Errorf("event stream: %w", f.Err)
			}
			if err := w.Store.Apply(f); err != nil {
				return streamed, err
			}
			streamed = true
			w.verifyPurged(ctx)
		}
	}
}

// verifyPurged drops jobs that a deregister evaluation says may be gone.
func (w *Watcher) verifyPurged(ctx context.Context) {
	for _, key := range w.Store.TakeVerify() {
		ns, id := splitKey(key)
		exists, err := w.Source.JobExists(ctx, ns, id)
		if err != nil {
			w.Log.Warn("checking job after deregister", "job", key, "error", err)
			continue
		}
		if !exists {
			w.Store.DeleteJob(ns, id)
		}
	}
}

func splitKey(key string) (string, string) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// runNamespaces refreshes namespace meta with blocking queries.
func (w *Watcher) runNamespaces(ctx context.Context) {
	var index uint64
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		nss, next, err := w.Source.Namespaces(ctx, index)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = nextBackoff(backoff, false, w.BackoffMax)
			w.Log.Warn("refreshing namespaces", "error", err, "backoff", backoff)
			select {
			case <-ctx.Done():
				return
			case <-w.After(backoff):
			}
			index = 0
			continue
		}
		backoff = 0
		if next != index || index == 0 {
			w.Store.SetNamespaces(nss)
		}
		index = next
	}
}
