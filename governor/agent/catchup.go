package agent

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The catch-up barrier: a governor that gains a term already follows
// Nomad's event stream (a standby keeps a warm snapshot), so before its
// first write it only has to wait until its store has applied every
// change Nomad committed before the term began. That costs two to six
// reads instead of a full listing (one read per job), and it loads no
// listing beside the running stream (which could overwrite newer state
// with older: the reason the restart of rebuild.go exists). When the
// watcher is not streaming, a read fails or the store does not get there
// within a bound, the caller falls back to the restart.

// Catch-up bounds: how long the store may take to reach Nomad's table
// index before the barrier looks at the objects themselves, and to reach
// that.
const (
	catchUpQuick = 250 * time.Millisecond
	catchUpBound = 2 * time.Second
)

var (
	// errNotStreaming: the watcher does not follow the stream now.
	errNotStreaming = errors.New("the cluster watcher is not streaming")
	// errBehind: the store did not reach Nomad's index within the bound.
	errBehind = errors.New("the store did not catch up with Nomad")
)

// nomadIndexes reads how far Nomad has moved (cluster.NomadSource).
type nomadIndexes interface {
	// TableIndex: the newest index of the tables the store follows
	// (cheap; moved by deletions that publish no event too).
	TableIndex(ctx context.Context) (uint64, error)
	// ObjectIndex: the newest ModifyIndex of what those tables hold.
	ObjectIndex(ctx context.Context) (uint64, error)
}

// indexStore is the store as the barrier sees it (cluster.Store).
type indexStore interface {
	Index() uint64
	AwaitIndex(ctx context.Context, index uint64) bool
}

// barrier waits for the store to catch up with Nomad.
type barrier struct {
	store indexStore
	// streaming is the watcher's health (cluster.Watcher.Streaming).
	streaming func() bool
	nomad     nomadIndexes
	// after is the clock of the bounds (time.After).
	after        func(time.Duration) <-chan time.Time
	quick, bound time.Duration
}

// wait returns nil once the store has applied, from the running stream,
// every change Nomad had committed when wait began; an error when it
// cannot tell (the caller then restarts the watcher) or ctx ended.
//
// Nomad's table indexes are the cheap target; the stream's frames carry
// the index of their change, so a store at or above it has them all. A
// table index can also sit above every event the stream will ever
// deliver (garbage collection deletes without an event; an idle cluster
// sends only heartbeats, which carry no index), so when the store does not
// reach it quickly, the target becomes the newest ModifyIndex of what
// Nomad holds: every upsert up to it is an event at its index.
func (b *barrier) wait(ctx context.Context) error {
	if !b.streaming() {
		return errNotStreaming
	}
	target, err := b.nomad.TableIndex(ctx)
	if err != nil {
		return fmt.Errorf("reading Nomad's index: %w", err)
	}
	if b.reached(ctx, target, b.quick) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	objects, err := b.nomad.ObjectIndex(ctx)
	if err != nil {
		return fmt.Errorf("reading Nomad's objects: %w", err)
	}
	if b.reached(ctx, objects, b.bound) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: store at index %d, Nomad's objects at %d (tables at %d) after %s",
		errBehind, b.store.Index(), objects, target, b.bound)
}

// reached waits up to d (or until ctx ends) for the store to reach index.
func (b *barrier) reached(ctx context.Context, index uint64, d time.Duration) bool {
	if b.store.Index() >= index {
		return true
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	timeout := b.after(d)
	go func() {
		select {
		case <-timeout:
			cancel()
		case <-wctx.Done():
		}
	}()
	return b.store.AwaitIndex(wctx, index)
}
