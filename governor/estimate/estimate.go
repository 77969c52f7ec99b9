// Package estimate learns run times for jobs that set no
// allot.max-runtime, so the engine's reservations and backfill can count
// on them on the real stack (the simulator learns its own, governor/sim).
// A Learner keeps, per tenant and job name and per tenant and device
// count, the run times of the latest finished runs, and answers the
// engine (engine.Config.Runtimes) with a conservative high percentile
// (engine.Estimator: the 90th of the last 50, from 5 runs on). It is fed
// from a Source of completed runs (the ledger, which persists them, so
// the estimates survive a restart).
package estimate

import (
	"container/list"
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/allot-sh/allot/governor/engine"
)

// Run is one finished run of a job version: every allocation completed.
type Run struct {
	Namespace, JobID string
	Version          uint64
	// Devices is the devices its allocations held together.
	Devices int64
	// Start is when its first allocation started, End when its last
	// one finished.
	Start, End time.Time
}

// Source lists completed runs that ended after since, oldest end first,
// at most limit of them.
type Source interface {
	CompletedRuns(ctx context.Context, since time.Time, limit int) ([]Run, error)
}

// Learner learns run times; safe for concurrent use.
type Learner struct {
	mu      sync.Mutex
	byName  *engine.Estimator
	byShape *engine.Estimator
	// cache holds the current estimate per key, refreshed on Observe.
	cache map[string]time.Duration
	// last is the latest end observed and seen the runs that ended then
	// (a source lists runs that end at since again).
	last time.Time
	seen map[string]bool
	// names holds, per tenant, its learned job names by their latest
	// observation (at most MaxNames).
	names map[string]*recent
}

// MaxNames is how many job names a Learner keeps per tenant: a tenant
// can make up job names without end, so past MaxNames the name observed
// least recently is forgotten (its runs still taught the tenant's
// device count).
const MaxNames = 1000

// recent is a tenant's name keys, the most recently observed first.
type recent struct {
	order *list.List // of name keys
	at    map[string]*list.Element
}

// New returns an empty learner.
func New() *Learner {
	return &Learner{byName: engine.NewEstimator(), byShape: engine.NewEstimator(), cache: map[string]time.Duration{}, seen: map[string]bool{},
		names: map[string]*recent{}}
}

// Name is the name a job's run times are learned by: its ID without the
// suffix Nomad gives a dispatched or periodic child ("/dispatch-…",
// "/periodic-…"), so every child of one parent shares its parent's.
func Name(jobID string) string {
	for _, sep := range []string{"/dispatch-", "/periodic-"} {
		if i := strings.Index(jobID, sep); i >= 0 {
			return jobID[:i]
		}
	}
	return jobID
}

func nameKey(ns, id string) string       { return ns + "\x00" + Name(id) }
func shapeKey(ns string, n int64) string { return ns + "\x00#" + strconv.FormatInt(n, 10) }

// Observe records a finished run. Runs must come in the order of their
// ends, as a Source lists them: one that ended before the latest end
// observed, or was observed already, is ignored; one with no positive
// duration teaches nothing.
func (l *Learner) Observe(r Run) {
	d := r.End.Sub(r.Start)
	if d <= 0 || r.Start.IsZero() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.End.Before(l.last) {
		return
	}
	if r.End.After(l.last) {
		l.last, l.seen = r.End, map[string]bool{}
	}
	id := r.Namespace + "\x00" + r.JobID + "\x00" + strconv.FormatUint(r.Version, 10)
	if l.seen[id] {
		return
	}
	l.seen[id] = true
	nk, sk := nameKey(r.Namespace, r.JobID), shapeKey(r.Namespace, r.Devices)
	l.keepName(r.Namespace, nk)
	l.byName.Observe(nk, d)
	l.byShape.Observe(sk, d)
	l.cache[nk], l.cache[sk] = l.byName.Estimate(nk), l.byShape.Estimate(sk)
}

// keepName marks name key nk of tenant ns as observed now and forgets
// the tenant's least recently observed name when it would keep more
// than MaxNames.
func (l *Learner) keepName(ns, nk string) {
	r := l.names[ns]
	if r == nil {
		r = &recent{order: list.New(), at: map[string]*list.Element{}}
		l.names[ns] = r
	}
	if e, ok := r.at[nk]; ok {
		r.order.MoveToFront(e)
		return
	}
	r.at[nk] = r.order.PushFront(nk)
	if r.order.Len() <= MaxNames {
		return
	}
	old := r.order.Remove(r.order.Back()).(string)
	delete(r.at, old)
	l.byName.Forget(old)
	delete(l.cache, old)
}

// Estimate is engine.Config.Runtimes: the learned run time of j by its
// tenant and name, else by its tenant and device count; zero when
// fewer than five such runs finished.
func (l *Learner) Estimate(j *engine.Job) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.cache[nameKey(j.Namespace, j.ID)]; d > 0 {
		return d
	}
	return l.cache[shapeKey(j.Namespace, Devices(j))]
}

// Devices counts the device instances all of j's allocations ask for.
func Devices(j *engine.Job) int64 {
	var n int64
	for _, g := range j.Groups {
		for _, d := range g.Devices {
			n += int64(g.Count) * int64(d.Count)
		}
	}
	return n
}

// Since is the end of the latest run observed (zero before any).
func (l *Learner) Since() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}
