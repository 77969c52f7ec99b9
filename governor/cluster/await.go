package cluster

import "context"

// indexWaiter is one AwaitIndex call waiting for the store's index.
type indexWaiter struct {
	index uint64
	ch    chan struct{}
}

// AwaitIndex waits until the store has applied Raft index index (an event
// frame at or above it, or a listing at least as new) and reports true,
// or until ctx ends: false unless the index was reached meanwhile.
func (s *Store) AwaitIndex(ctx context.Context, index uint64) bool {
	s.mu.Lock()
	if s.index >= index {
		s.mu.Unlock()
		return true
	}
	w := indexWaiter{index: index, ch: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case <-w.ch:
		return true
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range s.waiters {
		if o.ch == w.ch {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			break
		}
	}
	return s.index >= index
}

// releaseWaiters wakes the AwaitIndex calls the index reached. Callers
// hold s.mu.
func (s *Store) releaseWaiters() {
	keep := s.waiters[:0]
	for _, w := range s.waiters {
		if s.index >= w.index {
			close(w.ch)
			continue
		}
		keep = append(keep, w)
	}
	s.waiters = keep
}
