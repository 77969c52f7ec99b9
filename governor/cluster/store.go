// Package cluster keeps the governor's in-memory view of a Nomad cluster:
// a Store of nodes, allocations, jobs and namespace meta, fed by a Watcher
// that follows Nomad's event stream and resyncs in full after any gap or
// error.
package cluster

import (
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/quota"
)

// Initial is a full listing of the cluster, the base events apply to.
type Initial struct {
	// Index is the Raft index the listing is at least as new as.
	Index  uint64
	Nodes  []*api.Node
	Allocs []*api.Allocation
	Jobs   []*api.Job
	// Blocked lists Nomad's blocked evaluations (Store.noteEval).
	Blocked []*api.Evaluation `json:",omitempty"`
	// Deregs holds, by "ns/id", the index of the latest job-deregister
	// evaluation of held jobs: a user's stop the event stream did not
	// deliver (the governor was down).
	Deregs map[string]uint64 `json:",omitempty"`
}

// Store is the snapshot of the cluster. It never mutates what it handed
// out: updates replace entries, so a Snapshot stays consistent while the
// engine reads it. Safe for concurrent use.
type Store struct {
	mu       sync.RWMutex
	nodes    map[string]*engine.Node
	allocs   map[string]*engine.Alloc
	jobs     map[string]*engine.Job
	meta     map[string]map[string]string // namespace → meta
	ckpt     map[string]time.Time         // alloc ID → last checkpoint saved
	verify   map[string]bool              // jobs that may have been purged
	deregAt  map[string]uint64            // job → Raft index of its latest deregister
	index    uint64
	synced   bool
	nsLoaded bool
	// gen counts changes to anything but held jobs and blocked
	// evaluations (see Gen).
	gen     uint64
	book    *quota.Book
	governs func(ns string) bool
	changed chan struct{}
	// sealer verifies the governor records of stored jobs (UseSealer).
	sealer *jobmeta.Sealer
	// tokens is what the cluster demands of submitters (UseTokens).
	tokens jobmeta.Tokens
	// refs maps opaque preemptor references to job keys (refs.go).
	refs map[string]string
	// blocked holds, by job key, Nomad's blocked evaluations of the job:
	// evaluation ID → the job version (JobModifyIndex) it is for (see
	// noteEval).
	blocked map[string]map[string]uint64
	// reserved holds the proxy's reservations, deadAt when finished jobs
	// were first seen finished, prunedAt the last sweep (prune.go).
	reserved map[string]reservation
	deadAt   map[string]time.Time
	prunedAt time.Time
	clock    func() time.Time
	// waiters wait for the index to reach theirs (AwaitIndex).
	waiters []indexWaiter
	// pins holds, by job key, the verified placement pin of the stored
	// job version (pin.go).
	pins map[string]pinAt
}

// UseSealer makes the store trust a job's governor record only when
// sealer verifies its admission seal; without one, no job is admitted or
// held (all count as direct or stopped).
func (s *Store) UseSealer(sealer *jobmeta.Sealer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sealer = sealer
}

// UseTokens tells the store which submitter tokens the cluster demands
// (jobmeta.TokensFromAgent); jobs converted afterwards mark NeedsToken
// accordingly. Without it, every token counts as demanded. Call it before
// the watcher fills the store.
func (s *Store) UseTokens(t jobmeta.Tokens) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = t
}

// NeedsSubmitterToken reports whether Nomad would refuse to register j
// without its submitter's Vault or Consul token on this cluster
// (UseTokens).
func (s *Store) NeedsSubmitterToken(j *api.Job) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tokens.Needs(j)
}

// NewStore returns an empty store. book receives namespace meta; governs
// filters which namespaces may be governed at all.
func NewStore(book *quota.Book, governs func(string) bool) *Store {
	if book == nil {
		book = quota.NewBook(nil)
	}
	if governs == nil {
		governs = func(string) bool { return true }
	}
	return &Store{nodes: map[string]*engine.Node{}, allocs: map[string]*engine.Alloc{}, jobs: map[string]*engine.Job{},
		meta: map[string]map[string]string{}, ckpt: map[string]time.Time{}, verify: map[string]bool{}, deregAt: map[string]uint64{}, book: book, governs: governs,
		changed: make(chan struct{}, 1), reserved: map[string]reservation{}, deadAt: map[string]time.Time{}, clock: time.Now,
		blocked: map[string]map[string]uint64{}, pins: map[string]pinAt{}}
}

// Changed is signalled (coalesced) after every change.
func (s *Store) Changed() <-chan struct{} { return s.changed }

func (s *Store) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Reset replaces the whole content (but not namespaces) with a listing.
// The proxy's reservations Nomad has not confirmed yet stay (audit #24),
// and held jobs the listing found stopped by their users (Initial.Deregs)
// are marked so (#21).
func (s *Store) Reset(in *Initial) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes, s.allocs, s.jobs = map[string]*engine.Node{}, map[string]*engine.Alloc{}, map[string]*engine.Job{}
	s.ckpt, s.deadAt = map[string]time.Time{}, map[string]time.Time{}
	s.pins = map[string]pinAt{}
	for _, n := range in.Nodes {
		s.nodes[n.ID] = ConvertNode(n)
	}
	for _, a := range in.Allocs {
		s.putAlloc(a)
	}
	for key, idx := range in.Deregs {
		if idx > s.deregAt[key] {
			s.deregAt[key] = idx
		}
	}
	s.noteRefs(in.Jobs)
	for _, j := range in.Jobs {
		s.putJob(j, true)
	}
	s.blocked = map[string]map[string]uint64{}
	for _, ev := range in.Blocked {
		s.noteEval(ev)
	}
	s.restoreReservations()
	s.prune(s.clock())
	s.index, s.synced = in.Index, true
	s.releaseWaiters()
	s.gen++
	s.notify()
}

// Synced tells whether a full listing was loaded.
func (s *Store) Synced() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.synced
}

// Ready tells whether both a full listing and the namespaces are loaded:
// only then can the governor tell governed namespaces from others.
func (s *Store) Ready() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.synced && s.nsLoaded
}

// Index is the newest Raft index applied.
func (s *Store) Index() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.index
}

func (s *Store) putAlloc(a *api.Allocation) {
	s.gen++
	if c := ConvertAlloc(a); c != nil {
		s.allocs[a.ID] = c
	} else {
		delete(s.allocs, a.ID)
		delete(s.ckpt, a.ID) // only running work needs its checkpoint age
		return
	}
	if at, ok := LastSaved(a); ok && at.After(s.ckpt[a.ID]) {
		s.ckpt[a.ID] = at
	}
	// The engine weighs preemption victims by the work they lose.
	s.allocs[a.ID].LastCheckpoint = s.ckpt[a.ID]
}

// putJob stores a job unless the store holds a newer version of it (force
// ignores versions, for full listings).
func (s *Store) putJob(j *api.Job, force bool) {
	c, pin := s.convert(j)
	s.putConverted(c, force)
	s.notePin(c, pin)
}

// putConverted stores converted job c (see putJob). It does not replace
// a reservation of the proxy with the version that reservation replaces.
func (s *Store) putConverted(c *engine.Job, force bool) {
	if old, ok := s.jobs[c.Key()]; ok && !force && old.Version > c.Version || s.keepReserved(c) {
		return
	}
	if s.deregAt[c.Key()] < c.Version {
		delete(s.deregAt, c.Key()) // only a deregister at or above the version matters
	}
	s.trackDead(c)
	c.StoppedByUser = c.State == engine.Queued && s.deregAt[c.Key()] >= c.Version
	if old := s.jobs[c.Key()]; c.State != engine.Queued || (old != nil && old.State != engine.Queued) {
		s.gen++
	}
	s.jobs[c.Key()] = c
}

// Gen counts changes of nodes, allocations, namespaces and jobs that are
// not held. Held jobs hold nothing, so what the proxy accounts for a
// submission (engine.Base) stays valid while Gen does not move. Nomad's
// blocked evaluations do not move it either (noteEval): they change a
// job's Blocked, which only cycles read (every Snapshot computes it), not
// what the job reserves.
func (s *Store) Gen() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gen
}

// deregistered records a job-deregister evaluation at Raft index idx (the
// index of the deregister itself). A held job deregistered at or after its
// latest version was stopped by its user (`nomad job stop`; Nomad 1.6.1
// gives the stopped job that same index). The governor's own holds are
// registrations, never deregistrations. The job may also have been purged,
// which the watcher checks.
func (s *Store) deregistered(key string, idx uint64) {
	s.verify[key] = true
	if idx <= s.deregAt[key] {
		return
	}
	s.deregAt[key] = idx
	if j, ok := s.jobs[key]; ok && j.State == engine.Queued && idx >= j.Version {
		cp := *j
		cp.StoppedByUser = true
		s.jobs[key] = &cp
	}
}

// UpsertJob records a job the governor itself just wrote, so the next
// cycle sees it before its event arrives. Older versions never replace
// newer ones. A job just registered to run is not dead, whatever status
// the written body carried (audit #24: a caller-set Status "dead" would
// make it reserve nothing until its event arrives).
func (s *Store) UpsertJob(j *api.Job) {
	s.mu.Lock()
	c, pin := s.convert(j)
	if c.State != engine.Queued && c.State != engine.Stopped {
		c.Dead = false
	}
	s.putConverted(c, false)
	s.notePin(c, pin)
	s.mu.Unlock()
	s.notify()
}

// PutEngineJob records an engine view of a job directly (a reservation
// the proxy makes before Nomad has the job) and returns what it replaced.
func (s *Store) PutEngineJob(j *engine.Job) *engine.Job {
	s.mu.Lock()
	_, prev := s.reserve(j)
	s.maybePrune()
	s.gen++
	s.mu.Unlock()
	s.notify()
	return prev
}

// RestoreEngineJob undoes PutEngineJob: it puts prev back (or forgets the
// job when prev is nil), unless the job changed since.
func (s *Store) RestoreEngineJob(key string, prev *engine.Job) {
	s.mu.Lock()
	delete(s.reserved, key)
	if prev == nil {
		delete(s.jobs, key)
	} else {
		s.jobs[key] = prev
	}
	s.gen++
	s.mu.Unlock()
	s.notify()
}

// DeleteJob forgets job ns/id (it was purged) and its allocations.
func (s *Store) DeleteJob(ns, id string) {
	s.mu.Lock()
	s.forget(ns + "/" + id)
	s.gen++
	s.mu.Unlock()
	s.notify()
}

// TakeVerify returns and clears the "ns/id" keys of jobs that may have
// been purged since the last call.
func (s *Store) TakeVerify() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.verify))
	for k := range s.verify {
		keys = append(keys, k)
	}
	s.verify = map[string]bool{}
	sort.Strings(keys)
	return keys
}

// Job returns the engine view of job ns/id.
func (s *Store) Job(ns, id string) (*engine.Job, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	j, ok := s.jobs[ns+"/"+id]
	return j, ok
}

// SetNamespaces replaces the namespaces and their meta and updates the
// quota book (last-valid-config rule).
func (s *Store) SetNamespaces(nss []*api.Namespace) {
	s.mu.Lock()
	s.meta = map[string]map[string]string{}
	keep := map[string]bool{}
	for _, ns := range nss {
		s.meta[ns.Name] = ns.Meta
		if s.governs(ns.Name) {
			if _, governed := s.book.Update(ns.Name, ns.Meta); governed {
				keep[ns.Name] = true
			}
		}
	}
	s.book.Retain(keep)
	s.nsLoaded = true
	s.gen++
	s.mu.Unlock()
	s.notify()
}

// Namespaces returns the names of every namespace, sorted.
func (s *Store) Namespaces() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.meta))
	for n := range s.meta {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LastCheckpoint returns when the newest checkpoint allocation id reported
// saving was written (see LastSaved).
func (s *Store) LastCheckpoint(id string) (time.Time, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.ckpt[id]
	return t, ok
}

// Snapshot returns the engine's input at time now.
func (s *Store) Snapshot(now time.Time) *engine.Snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	snap := &engine.Snapshot{Now: now, Tenants: map[string]*engine.Tenant{}}
	for _, e := range s.book.All() {
		snap.Tenants[e.Tenant.Namespace] = &engine.Tenant{Tenant: e.Tenant, Err: e.Err}
	}
	for _, n := range s.nodes {
		snap.Nodes = append(snap.Nodes, n)
	}
	for _, a := range s.allocs {
		snap.Allocs = append(snap.Allocs, a)
	}
	for _, j := range s.jobs {
		if j.State == engine.Queued && !s.governs(j.Namespace) {
			// Held by another governor (or kept held by an operator) in a
			// namespace outside governed_namespaces: not this governor's to
			// release. Held, it holds nothing, so leaving it out changes no
			// accounting. (The engine releases held jobs of namespaces that
			// lost their allot.* meta; this governor never governed these.)
			continue
		}
		if !j.Blocked && s.blockedAt(j) {
			cp := *j // entries are never mutated: the snapshot gets a copy
			cp.Blocked = true
			j = &cp
		}
		snap.Jobs = append(snap.Jobs, j)
	}
	return snap
}
