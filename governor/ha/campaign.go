package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

// callTimeout bounds each one-shot Consul call (not the blocking queries,
// which carry their own wait time): a stalled agent must not hold up the
// campaign or a resignation.
const callTimeout = 10 * time.Second

// Reasons a session or a term ends.
var (
	errSessionGone = errors.New("session invalidated by consul")
	errLockLost    = errors.New("lock key no longer held by this session")
	errLeaseEnded  = errors.New("lease expired before consul confirmed a renewal (self-fenced)")
)

// Run campaigns until ctx ends or Resign is called: it creates a Consul
// session, registers this member, waits for the lock, leads while it holds
// the lock with a valid lease, and after any loss starts over with a new
// session. Consul errors are logged and retried. When ctx ends Run stops
// leading at once and returns ctx's error without touching Consul (the
// lock is then freed when the session expires, as after a crash); call
// Resign for a fast, clean handover. After Resign, Run returns nil.
func (e *Elector) Run(ctx context.Context) error {
	ctx, done, err := e.startRun(ctx)
	if err != nil {
		return err
	}
	defer e.endRun(done)
	for {
		err := e.campaign(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			e.log.Warn("campaign interrupted; starting over", "error", err, "retry_in", e.cfg.RetryInterval)
		}
		select {
		case <-ctx.Done():
		case <-e.clock.After(e.cfg.RetryInterval):
		}
	}
	e.mu.Lock()
	resigned := e.resigned
	e.mu.Unlock()
	if resigned {
		return nil
	}
	return ctx.Err()
}

// startRun marks the elector running and returns the campaign's context.
func (e *Elector) startRun(parent context.Context) (context.Context, chan struct{}, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.resigned {
		return nil, nil, ErrResigned
	}
	if e.running {
		return nil, nil, ErrRunning
	}
	ctx, cancel := context.WithCancel(parent)
	e.running, e.stopRun, e.runDone = true, cancel, make(chan struct{})
	return ctx, e.runDone, nil
}

func (e *Elector) endRun(done chan struct{}) {
	e.mu.Lock()
	if e.stopRun != nil {
		e.stopRun()
	}
	e.running, e.stopRun = false, nil
	e.mu.Unlock()
	close(done)
}

// sessionState is one Consul session's life: its lease and the first
// reason it ended.
type sessionState struct {
	id     string
	lease  *lease
	cancel context.CancelFunc

	once sync.Once
	err  error
	// wg counts the session's goroutines; campaign waits for them, so Run
	// leaves nothing running behind it.
	wg sync.WaitGroup
}

// spawn runs f in a goroutine counted by wg.
func (s *sessionState) spawn(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// fail records why the session ended and stops everything bound to it.
func (s *sessionState) fail(err error) {
	s.once.Do(func() { s.err = err })
	s.cancel()
}

// campaign runs one session: open it, keep it alive, stand by or lead.
// When the session ends for any reason but ctx, it is destroyed (Consul
// then applies lock-delay, which covers writes still in flight).
func (e *Elector) campaign(ctx context.Context) error {
	l := newLease(e.clock, e.cfg.SessionTTL, e.cfg.CheckTTL, e.cfg.Margin)
	sid, err := e.openSession(ctx, l)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &sessionState{id: sid, lease: l, cancel: cancel}
	s.spawn(func() { e.keepAlive(sctx, s) })
	err = e.holdSession(sctx, s)
	s.fail(err)
	s.wg.Wait()
	l.end()
	e.setStatus(func(st *Status) {
		if st.Leading {
			st.Leading, st.Term, st.Leader, st.Epoch = false, Term{}, Member{}, 0
		}
	})
	if ctx.Err() != nil {
		return nil // stopped or resigned: leave Consul as it is
	}
	e.abandon(sid)
	return s.err
}

// openSession registers the health check (with CheckTTL) and creates the
// session, recording both as the lease's first bases.
func (e *Elector) openSession(ctx context.Context, l *lease) (string, error) {
	se := &api.SessionEntry{Name: "allot-governor " + e.cfg.MemberID, TTL: e.cfg.SessionTTL.String(),
		LockDelay: e.cfg.LockDelay, Behavior: api.SessionBehaviorRelease}
	if e.cfg.CheckTTL > 0 {
		start := e.clock.Now()
		reg := &api.AgentCheckRegistration{ID: e.checkID(), Name: "allot-governor " + e.cfg.MemberID + " alive",
			AgentServiceCheck: api.AgentServiceCheck{TTL: e.cfg.CheckTTL.String(), Status: api.HealthPassing}}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		// Agent().CheckRegister takes no context: the same PUT through Raw.
		if _, err := e.consul.Raw().Write("/v1/agent/check/register", reg, nil,
			(&api.WriteOptions{}).WithContext(cctx)); err != nil {
			return "", fmt.Errorf("ha: registering check %s: %w", e.checkID(), err)
		}
		// Consul keeps the status of a check registered again under the
		// same ID (a governor restarted after kill -9 finds its old check
		// critical, and no session can be bound to it): pass it explicitly.
		if err := e.consul.Agent().UpdateTTLOpts(e.checkID(), "", api.HealthPassing, (&api.QueryOptions{}).WithContext(cctx)); err != nil {
			return "", fmt.Errorf("ha: passing check %s: %w", e.checkID(), err)
		}
		l.checked(start)
		// Bound only to this check (and the TTL), not to serfHealth, whose
		// failure could invalidate the session at a time the lease cannot
		// bound.
		se.NodeChecks = []string{e.checkID()}
	}
	e.destroyStale(ctx)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	w := (&api.WriteOptions{}).WithContext(cctx)
	start := e.clock.Now()
	var sid string
	var err error
	if e.cfg.CheckTTL > 0 {
		sid, _, err = e.consul.Session().Create(se, w)
	} else {
		sid, _, err = e.consul.Session().CreateNoChecks(se, w)
	}
	if err != nil {
		return "", fmt.Errorf("ha: creating session: %w", err)
	}
	l.renewed(start)
	e.mu.Lock()
	e.session = sid
	e.mu.Unlock()
	e.log.Debug("session created", "session", sid)
	return sid, nil
}

// keepAlive renews the session (and updates the check) every
// RenewInterval, extending the lease from each request's start. It ends
// the session when Consul says it is gone or the lease runs out.
func (e *Elector) keepAlive(ctx context.Context, s *sessionState) {
	// The member entry is written here, retried each round until it takes:
	// lock-delay left by this member's previous session can refuse it.
	registered := e.registerMember(ctx, s.id)
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.clock.After(e.cfg.RenewInterval):
		}
		err := e.renewOnce(ctx, s)
		if err == nil && !registered {
			registered = e.registerMember(ctx, s.id)
		}
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errSessionGone):
			s.fail(err)
			return
		case err != nil && !s.lease.valid():
			s.fail(fmt.Errorf("%w: %v", errLeaseEnded, err))
			return
		case err != nil:
			e.log.Warn("keeping the session alive failed; lease runs on", "error", err,
				"deadline_in", time.Until(s.lease.deadline()).Round(time.Millisecond))
		}
	}
}

// renewOnce updates the check (with CheckTTL) and renews the session, each
// bounded by RenewInterval.
func (e *Elector) renewOnce(ctx context.Context, s *sessionState) error {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.RenewInterval)
	defer cancel()
	if e.cfg.CheckTTL > 0 {
		start := e.clock.Now()
		q := (&api.QueryOptions{}).WithContext(rctx)
		if err := e.consul.Agent().UpdateTTLOpts(e.checkID(), "", api.HealthPassing, q); err != nil {
			return fmt.Errorf("updating check: %w", err)
		}
		s.lease.checked(start)
	}
	start := e.clock.Now()
	entry, _, err := e.consul.Session().Renew(s.id, (&api.WriteOptions{}).WithContext(rctx))
	if err != nil {
		return fmt.Errorf("renewing session: %w", err)
	}
	if entry == nil {
		return errSessionGone
	}
	s.lease.renewed(start)
	return nil
}

// abandon destroys a session that ended (best effort, briefly bounded).
func (e *Elector) abandon(sid string) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.RetryInterval)
	defer cancel()
	_, err := e.consul.Session().Destroy(sid, (&api.WriteOptions{}).WithContext(ctx))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session == sid {
		e.session = ""
	}
	if err != nil {
		e.log.Debug("destroying the abandoned session failed; retried before the next one", "session", sid, "error", err)
		e.stale = append(e.stale, sid)
	}
}

// destroyStale retries destroying sessions abandoned while Consul was out
// of reach, so that an old session kept alive by this member's shared
// check does not hold the lock until its TTL runs out.
func (e *Elector) destroyStale(ctx context.Context) {
	e.mu.Lock()
	stale := e.stale
	e.stale = nil
	e.mu.Unlock()
	for _, sid := range stale {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := e.consul.Session().Destroy(sid, (&api.WriteOptions{}).WithContext(cctx))
		cancel()
		if err != nil {
			e.mu.Lock()
			e.stale = append(e.stale, sid)
			e.mu.Unlock()
		}
	}
}

// holdSession stands by until the lock is free, takes it, and leads until
// the term ends; it returns why the session must end.
func (e *Elector) holdSession(ctx context.Context, s *sessionState) error {
	refusedFree := false
	var index uint64
	for {
		if !s.lease.valid() {
			return errLeaseEnded
		}
		term, ok, err := e.tryLock(ctx, s)
		if err != nil && ctx.Err() == nil {
			e.log.Debug("lock attempt failed", "error", err)
		}
		if ok {
			return e.lead(ctx, s, term)
		}
		if refusedFree { // the key is free but Consul refused it: lock-delay
			if err := e.pause(ctx, e.cfg.AcquireRetry); err != nil {
				return err
			}
		}
		if index, refusedFree, err = e.waitFree(ctx, index); err != nil {
			return err
		}
	}
}

// registerMember writes this member's entry held by the session; it
// reports whether that worked (lock-delay from this member's previous
// session can refuse it for a while).
func (e *Elector) registerMember(ctx context.Context, sid string) bool {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	value, _ := json.Marshal(e.me)
	ok, _, err := e.consul.KV().Acquire(&api.KVPair{Key: e.memberKey(), Value: value, Session: sid},
		(&api.WriteOptions{}).WithContext(ctx))
	if err != nil && ctx.Err() == nil {
		e.log.Debug("registering member entry failed", "error", err)
	}
	return err == nil && ok
}

// tryLock tries to take the lock key with the session in one transaction
// that returns the key's modify index: the new term's epoch. Term.Start is
// taken before the request, so no acquisition can precede it.
func (e *Elector) tryLock(ctx context.Context, s *sessionState) (Term, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	value, _ := json.Marshal(e.me)
	start := e.clock.Now()
	ops := api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVLock, Key: e.cfg.Key, Value: value, Session: s.id}}}
	ok, resp, _, err := e.consul.Txn().Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return Term{}, false, fmt.Errorf("lock transaction: %w", err)
	}
	if !ok {
		return Term{}, false, fmt.Errorf("lock refused: %v", txnErrors(resp))
	}
	if len(resp.Results) != 1 || resp.Results[0].KV == nil || resp.Results[0].KV.Session != s.id {
		return Term{}, false, errors.New("lock transaction returned no entry held by this session")
	}
	return Term{Epoch: resp.Results[0].KV.ModifyIndex, Start: start, lease: s.lease}, true, nil
}

func txnErrors(resp *api.TxnResponse) []string {
	if resp == nil {
		return nil
	}
	var out []string
	for _, e := range resp.Errors {
		out = append(out, e.What)
	}
	return out
}

// waitFree blocks until the lock key has no holder, recording the holder
// it sees as the leader; it returns the next wait index and whether the key
// is free. A free key gets index 0, so the next wait reads at once: a
// refused attempt on a free key changes nothing a blocking query would see.
func (e *Elector) waitFree(ctx context.Context, index uint64) (uint64, bool, error) {
	for {
		q := (&api.QueryOptions{WaitIndex: index, WaitTime: e.cfg.SessionTTL}).WithContext(ctx)
		pair, meta, err := e.consul.KV().Get(e.cfg.Key, q)
		if ctx.Err() != nil {
			return index, false, ctx.Err()
		}
		if err != nil {
			e.log.Debug("watching the lock key failed", "error", err)
			if err := e.pause(ctx, e.cfg.AcquireRetry); err != nil {
				return index, false, err
			}
			continue
		}
		index = nextIndex(index, meta.LastIndex)
		e.observe(pair)
		if pair == nil || pair.Session == "" {
			return 0, true, nil
		}
	}
}

// nextIndex is the wait index after a blocking query: Consul's index, reset
// when it went backwards (a restored or rebuilt cluster).
func nextIndex(prev, got uint64) uint64 {
	if got < prev {
		return 0
	}
	return got
}

// observe records the lock key's holder as the known leader.
func (e *Elector) observe(pair *api.KVPair) {
	var leader Member
	var epoch uint64
	if pair != nil && pair.Session != "" {
		if err := json.Unmarshal(pair.Value, &leader); err != nil {
			e.log.Warn("unreadable leader entry", "key", pair.Key, "error", err)
			leader = Member{}
		} else if err := leader.check(); err != nil {
			e.log.Warn("leader entry refused: standbys will not forward to it", "key", pair.Key, "error", err)
			leader = Member{}
		}
		epoch = pair.ModifyIndex
	}
	e.setStatus(func(st *Status) {
		if !st.Leading {
			st.Leader, st.Epoch = leader, epoch
		}
	})
}

func (e *Elector) pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-e.clock.After(d):
		return nil
	}
}
