package estimate

import (
	"context"
	"fmt"
	"time"
)

// Batch is how many runs one Source call returns at most.
const Batch = 1000

// Sync observes every run the source lists from the latest end observed
// (from, before any), in batches, and returns how many it read.
func (l *Learner) Sync(ctx context.Context, src Source, from time.Time) (int, error) {
	total := 0
	for {
		since := l.Since()
		if since.IsZero() {
			since = from
		}
		runs, err := src.CompletedRuns(ctx, since, Batch)
		if err != nil {
			return total, fmt.Errorf("reading completed runs since %s: %w", since.UTC().Format(time.RFC3339), err)
		}
		for _, r := range runs {
			l.Observe(r)
		}
		total += len(runs)
		// A full batch whose runs all end at since would repeat itself.
		if len(runs) < Batch || !l.Since().After(since) {
			return total, nil
		}
	}
}

// Follow syncs from the source at once, then after every tick, until ctx
// ends; errors go to report (nil: dropped) and the next tick retries.
func (l *Learner) Follow(ctx context.Context, src Source, from time.Time, tick <-chan time.Time, report func(error)) {
	for {
		if _, err := l.Sync(ctx, src, from); err != nil && ctx.Err() == nil && report != nil {
			report(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}
