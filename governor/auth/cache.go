package auth

import (
	"container/list"
	"sync"
	"time"
)

// cache keeps resolved callers (and refusals) by a hash of the secret for
// a short TTL, at most max entries (least recently used out first).
// Lookups of one secret in flight at the same time share one resolution.
type cache struct {
	mu       sync.Mutex
	max      int
	entries  map[[32]byte]*list.Element
	lru      *list.List // front: most recently used
	inflight map[[32]byte]*call
}

type entry struct {
	key    [32]byte
	caller *Caller
	err    error
	until  time.Time
}

// call is one resolution in flight; done closes when it has its answer.
type call struct {
	done   chan struct{}
	caller *Caller
	err    error
}

func newCache(max int) *cache {
	return &cache{max: max, entries: map[[32]byte]*list.Element{}, lru: list.New(), inflight: map[[32]byte]*call{}}
}

// get returns a live entry.
func (c *cache) get(key [32]byte, now time.Time) (*entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*entry)
	if !now.Before(e.until) {
		c.lru.Remove(el)
		delete(c.entries, key)
		return nil, false
	}
	c.lru.MoveToFront(el)
	return e, true
}

// put stores an entry, evicting the least recently used beyond max.
func (c *cache) put(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[e.key]; ok {
		el.Value = e
		c.lru.MoveToFront(el)
		return
	}
	c.entries[e.key] = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*entry).key)
	}
}

// len is the number of entries (expired ones included until touched).
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// join returns the call in flight for key and false, or registers a new
// one and returns it with true: the caller then resolves and calls finish.
func (c *cache) join(key [32]byte) (*call, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.inflight[key]; ok {
		return cl, false
	}
	cl := &call{done: make(chan struct{})}
	c.inflight[key] = cl
	return cl, true
}

// finish publishes the answer of a call and forgets it.
func (c *cache) finish(key [32]byte, cl *call, caller *Caller, err error) {
	c.mu.Lock()
	delete(c.inflight, key)
	c.mu.Unlock()
	cl.caller, cl.err = caller, err
	close(cl.done)
}
