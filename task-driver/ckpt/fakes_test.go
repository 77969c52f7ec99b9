package ckpt

import (
	"sync"
	"syscall"
	"time"
)

// fakeClock is a manual clock. Every After call is announced on armed so a
// test can advance time exactly when the code under test waits.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
	hooks   []fakeHook
	armed   chan struct{}
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

type fakeHook struct {
	at time.Time
	fn func()
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_700_000_000, 0), armed: make(chan struct{}, 1<<16)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
	} else {
		c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	}
	c.mu.Unlock()
	c.armed <- struct{}{}
	return ch
}

// at runs fn once the clock reaches now+d, before timers of that instant fire.
func (c *fakeClock) at(d time.Duration, fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks = append(c.hooks, fakeHook{at: c.now.Add(d), fn: fn})
}

// Advance moves time forward, running due hooks and then firing due timers.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	var hooks []fakeHook
	for _, h := range c.hooks {
		if !h.at.After(c.now) {
			due = append(due, h.fn)
		} else {
			hooks = append(hooks, h)
		}
	}
	c.hooks = hooks
	c.mu.Unlock()
	for _, fn := range due {
		fn()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var keep []fakeWaiter
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			keep = append(keep, w)
		}
	}
	c.waiters = keep
}

// sigAt is a signal a fake process received, with when.
type sigAt struct {
	sig syscall.Signal
	at  time.Duration
}

// fakeProc is a process whose reactions to signals are scripted.
type fakeProc struct {
	clock    *fakeClock
	start    time.Time
	onSignal map[syscall.Signal]func(*fakeProc)

	mu      sync.Mutex
	got     []sigAt
	latest  *Latest
	exited  chan struct{}
	exitOne sync.Once
}

func newFakeProc(c *fakeClock) *fakeProc {
	return &fakeProc{clock: c, start: c.Now(), onSignal: map[syscall.Signal]func(*fakeProc){}, exited: make(chan struct{})}
}

func (p *fakeProc) SignalGroup(sig syscall.Signal) error {
	select {
	case <-p.exited:
		return syscall.ESRCH
	default:
	}
	p.mu.Lock()
	p.got = append(p.got, sigAt{sig: sig, at: p.clock.Now().Sub(p.start)})
	p.mu.Unlock()
	if fn := p.onSignal[sig]; fn != nil {
		fn(p)
	}
	return nil
}

func (p *fakeProc) Exited() <-chan struct{} { return p.exited }

func (p *fakeProc) exit() { p.exitOne.Do(func() { close(p.exited) }) }

func (p *fakeProc) writeLatest(step int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	raw := "/ckpt/step-" + time.Duration(step).String()
	p.latest = &Latest{Path: raw, Step: step, ModTime: p.clock.Now(), raw: raw}
}

func (p *fakeProc) readLatest() (Latest, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.latest == nil {
		return Latest{}, syscall.ENOENT
	}
	return *p.latest, nil
}

func (p *fakeProc) signals() []sigAt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sigAt(nil), p.got...)
}

// Reactions for fakeProc.onSignal.

func saveAfter(d time.Duration, step int64) func(*fakeProc) {
	return func(p *fakeProc) { p.clock.at(d, func() { p.writeLatest(step) }) }
}

func exitAfter(d time.Duration) func(*fakeProc) {
	return func(p *fakeProc) { p.clock.at(d, p.exit) }
}

func saveAndExitAfter(d time.Duration, step int64) func(*fakeProc) {
	return func(p *fakeProc) {
		p.clock.at(d, func() { p.writeLatest(step); p.exit() })
	}
}
