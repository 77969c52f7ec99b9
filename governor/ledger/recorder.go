package ledger

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/engine"
)

// Defaults of the recorder's periods.
const (
	DefaultAccrueEvery = 30 * time.Second
	DefaultAuditEvery  = 2 * time.Second
)

// Recorder keeps the ledger up to date: allocations (a catch-up listing at
// start, then blocking queries from the watermark), open segments accrued
// every AccrueEvery, capacity sampled as often, namespace meta and the
// decision journal polled every AuditEvery.
//
//	Nomad allocations ──► Segments ──► Ingest (rows + watermark, one tx)
//	Nomad nodes ───────► capacity rows (extended while unchanged)
//	Nomad namespaces ──► audit (actor unknown unless the proxy saw it)
//	decision journal ──► audit (kind decision:*)
type Recorder struct {
	DB    *DB
	Nomad Nomad
	// Context supplies class, queue time and checkpoints; its NodePool is
	// set by the recorder from the node listing.
	Context Context
	// Waiting returns queued demand (devices) per node pool and model.
	Waiting func() map[PoolModel]int64
	// Jobs looks jobs up for the demand of Nomad's blocked evaluations
	// (nil: not counted).
	Jobs func(ns, id string) (*engine.Job, bool)
	// Decisions returns the decision journal, newest first.
	Decisions func() []Decision
	// Audit records namespace meta changes; shared with the proxy hook.
	Audit *Auditor
	// Stats reads device utilization for the used basis (nil: not read).
	Stats       DeviceStats
	Log         hclog.Logger
	Now         func() time.Time
	AccrueEvery time.Duration
	AuditEvery  time.Duration

	mu    sync.Mutex
	pools map[string]string
	used  usedSampler
}

// Run records until ctx ends. Errors are logged and retried: the ledger
// never stops the governor, and the watermark only moves with the rows.
func (r *Recorder) Run(ctx context.Context) {
	r.defaults()
	for ctx.Err() == nil {
		if err := r.CatchUp(ctx); err != nil {
			r.Log.Warn("ledger catch-up failed; retrying", "error", err)
			if !wait(ctx, 2*time.Second) {
				return
			}
			continue
		}
		break
	}
	go r.every(ctx, r.AccrueEvery, r.tick)
	go r.every(ctx, r.AuditEvery, r.auditTick)
	r.follow(ctx)
}

func (r *Recorder) defaults() {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.AccrueEvery <= 0 {
		r.AccrueEvery = DefaultAccrueEvery
	}
	if r.AuditEvery <= 0 {
		r.AuditEvery = DefaultAuditEvery
	}
	if r.Log == nil {
		r.Log = hclog.NewNullLogger()
	}
}

// CatchUp lists every allocation Nomad still has, writes their segments
// with the listing's index, and closes open segments whose allocation is
// gone. It is what makes a restart after downtime exact, within Nomad's
// garbage-collection window (docs/ledger.md).
func (r *Recorder) CatchUp(ctx context.Context) error {
	r.defaults()
	if err := r.refreshNodes(ctx); err != nil {
		return err
	}
	allocs, index, err := r.Nomad.Allocations(ctx, "", 0, 0)
	if err != nil {
		return err
	}
	listed := make(map[string]bool, len(allocs))
	for _, a := range allocs {
		listed[a.ID] = true
	}
	if err := r.apply(ctx, allocs, index); err != nil {
		return err
	}
	n, err := r.DB.CloseVanished(ctx, listed)
	if n > 0 {
		r.Log.Warn("closed segments of allocations Nomad no longer lists (garbage-collected)", "count", n)
	}
	return err
}

// follow applies allocation changes as Nomad reports them.
func (r *Recorder) follow(ctx context.Context) {
	for ctx.Err() == nil {
		wm, err := r.DB.Watermark(ctx)
		if err == nil {
			var allocs []*api.AllocationListStub
			var index uint64
			allocs, index, err = r.Nomad.Allocations(ctx, "", wm, r.AccrueEvery)
			if err == nil && index > wm {
				err = r.apply(ctx, changedAfter(allocs, wm), index)
			}
		}
		if err != nil && ctx.Err() == nil {
			r.Log.Warn("ledger could not follow allocations; retrying", "error", err)
			if !wait(ctx, 2*time.Second) {
				return
			}
		}
	}
}

// changedAfter keeps the allocations modified after index. Nomad 1.6's
// filter expressions have no ordering operators, so the listing is whole
// and the ledger skips what it has applied.
func changedAfter(allocs []*api.AllocationListStub, index uint64) []*api.AllocationListStub {
	out := allocs[:0:0]
	for _, a := range allocs {
		if a.ModifyIndex > index {
			out = append(out, a)
		}
	}
	return out
}

// apply turns allocations into segments and ingests them with index.
func (r *Recorder) apply(ctx context.Context, allocs []*api.AllocationListStub, index uint64) error {
	now := r.Now()
	c := r.Context
	c.NodePool = r.poolOf(ctx)
	var segs []Segment
	for _, a := range allocs {
		segs = append(segs, Segments(a, c, now)...)
	}
	return r.DB.Ingest(ctx, segs, index)
}

// tick accrues open segments and samples capacity.
func (r *Recorder) tick(ctx context.Context) {
	now := r.Now()
	if _, err := r.DB.Accrue(ctx, now); err != nil {
		r.Log.Warn("ledger accrual failed", "error", err)
	}
	if r.Stats != nil {
		if err := r.used.sample(ctx, r.DB, r.Stats, now, r.AccrueEvery); err != nil {
			r.Log.Warn("ledger could not record device utilization", "error", err)
		}
	}
	nodes, err := r.Nomad.Nodes(ctx)
	if err != nil {
		r.Log.Warn("ledger could not list nodes", "error", err)
		return
	}
	r.setPools(nodes)
	waiting := r.waiting(ctx)
	inUse, err := r.DB.InUse(ctx)
	if err != nil {
		r.Log.Warn("ledger could not read devices in use", "error", err)
		return
	}
	if err := r.DB.SampleCapacity(ctx, InventoryInUse(nodes, waiting, inUse), now); err != nil {
		r.Log.Warn("ledger could not sample capacity", "error", err)
	}
}

// waiting is the governor's queued demand plus what Nomad could not place.
func (r *Recorder) waiting(ctx context.Context) map[PoolModel]int64 {
	out := map[PoolModel]int64{}
	if r.Waiting != nil {
		out = r.Waiting()
	}
	if r.Jobs == nil {
		return out
	}
	evals, err := r.Nomad.Blocked(ctx)
	if err != nil {
		r.Log.Warn("ledger could not list blocked evaluations", "error", err)
		return out
	}
	for k, n := range Blocked(evals, r.Jobs) {
		out[k] += n
	}
	return out
}

// auditTick persists new decisions and detects namespace meta changes.
func (r *Recorder) auditTick(ctx context.Context) {
	if r.Decisions != nil {
		if err := r.DB.PersistDecisions(ctx, r.Decisions()); err != nil {
			r.Log.Warn("ledger could not persist decisions", "error", err)
		}
	}
	if r.Audit != nil {
		if err := r.Audit.Detect(ctx, r.Nomad); err != nil {
			r.Log.Warn("ledger could not check namespace meta", "error", err)
		}
	}
}

func (r *Recorder) every(ctx context.Context, d time.Duration, fn func(context.Context)) {
	fn(ctx)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}

func (r *Recorder) refreshNodes(ctx context.Context) error {
	nodes, err := r.Nomad.Nodes(ctx)
	if err != nil {
		return err
	}
	r.setPools(nodes)
	return nil
}

func (r *Recorder) setPools(nodes []*api.NodeListStub) {
	m := make(map[string]string, len(nodes))
	for _, n := range nodes {
		m[n.ID] = n.NodePool
	}
	r.mu.Lock()
	r.pools = m
	r.mu.Unlock()
}

// poolOf returns the node pool lookup; a node not seen yet triggers one
// node listing.
func (r *Recorder) poolOf(ctx context.Context) func(string) string {
	return func(id string) string {
		r.mu.Lock()
		p, ok := r.pools[id]
		r.mu.Unlock()
		if !ok {
			if err := r.refreshNodes(ctx); err == nil {
				r.mu.Lock()
				p = r.pools[id]
				r.mu.Unlock()
			}
		}
		return p
	}
}

func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
