package ha

import (
	"context"

	"github.com/hashicorp/consul/api"
)

// lead holds the term until the lock is lost, the lease expires, the
// session fails or ctx ends, then steps down; it returns the reason.
func (e *Elector) lead(ctx context.Context, s *sessionState, term Term) error {
	if !term.Valid() {
		return errLeaseEnded // the lease ran out while the lock was taken
	}
	started := false
	e.setStatus(func(st *Status) {
		if e.resigned { // Resign began while the lock was being taken
			return
		}
		st.Leading, st.Term, st.Leader, st.Epoch = true, term, e.me, term.Epoch
		started = true
	})
	if !started {
		return ErrResigned
	}
	e.log.Info("leading", "epoch", term.Epoch, "lease_deadline_in", term.Deadline().Sub(e.clock.Now()))
	expired := make(chan struct{})
	s.spawn(func() {
		if s.lease.expired(ctx.Done()) {
			close(expired)
		}
	})
	lost := make(chan error, 1)
	s.spawn(func() { e.watchHeld(ctx, s.id, lost) })
	var err error
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-expired:
		err = errLeaseEnded
	case err = <-lost:
	}
	s.lease.end() // Leading is false from here on
	e.setStatus(func(st *Status) {
		st.Leading, st.Term, st.Leader, st.Epoch = false, Term{}, Member{}, 0
	})
	e.log.Warn("stepped down", "epoch", term.Epoch, "reason", err)
	return err
}

// watchHeld follows the lock key with blocking queries and reports when
// this session no longer holds it. Query errors are retried: the lease
// bounds how long the leader acts without hearing from Consul.
func (e *Elector) watchHeld(ctx context.Context, sid string, lost chan<- error) {
	var index uint64
	for {
		q := (&api.QueryOptions{WaitIndex: index, WaitTime: e.cfg.SessionTTL}).WithContext(ctx)
		pair, meta, err := e.consul.KV().Get(e.cfg.Key, q)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			e.log.Debug("watching the held lock failed", "error", err)
			if e.pause(ctx, e.cfg.AcquireRetry) != nil {
				return
			}
			continue
		}
		index = nextIndex(index, meta.LastIndex)
		if pair == nil || pair.Session != sid {
			lost <- errLockLost
			return
		}
	}
}
