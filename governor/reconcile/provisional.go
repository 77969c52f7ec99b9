package reconcile

import (
	"fmt"
	"sort"
	"time"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/quota"
)

// provisionalTTL bounds how long a proxy decision is shown on top of the
// latest plan when no cycle sees its job (say, Nomad never stored it).
const provisionalTTL = time.Minute

// provisional holds what the proxy decided since the latest plan: jobs it
// held, shown in the queue at the place the proxy answered, and jobs it
// admitted, counted in their tenant's usage. A plan decided from a
// snapshot that holds the job replaces the entry (guarded by
// Reconciler.plMu).
type provisional struct {
	entries map[string]provEntry
	// waiting counts, per node pool, the held entries that wait for
	// capacity (engine.WaitsForCapacity): the latest plan's Waiting does
	// not know them yet.
	waiting map[string]int
	// keys are the "ns/id" keys of keysOf's queue, in order (built once
	// per plan: a merge after each submission would otherwise build a
	// string per queued job).
	keys   []string
	keysOf *engine.Plan
}

// provEntry is one proxy decision.
type provEntry struct {
	v        engine.Verdict
	admitted bool
	use      quota.Vector
	at       time.Time
	// pool is the job's node pool; waits tells whether it is held for
	// capacity (provisional.waiting).
	pool  string
	waits bool
}

func (p *provisional) empty() bool { return len(p.entries) == 0 }

// settle drops the entries whose job the snapshot of the new plan held
// (the plan decided about it, whatever it decided: queued, admitted,
// forgotten after a user's stop), and those that expired.
func (p *provisional) settle(snap *engine.Snapshot, now time.Time) {
	if len(p.entries) == 0 {
		return
	}
	seen := make(map[string]bool, len(snap.Jobs))
	for _, j := range snap.Jobs {
		seen[j.Key()] = true
	}
	for key, e := range p.entries {
		if seen[key] || now.Sub(e.at) > provisionalTTL {
			p.del(key)
		}
	}
}

// put records entry e under key, replacing any before.
func (p *provisional) put(key string, e provEntry) {
	p.del(key)
	if p.entries == nil {
		p.entries = map[string]provEntry{}
	}
	p.entries[key] = e
	if e.waits {
		if p.waiting == nil {
			p.waiting = map[string]int{}
		}
		p.waiting[e.pool]++
	}
}

// del forgets the entry under key and tells whether there was one.
func (p *provisional) del(key string) bool {
	e, ok := p.entries[key]
	if !ok {
		return false
	}
	delete(p.entries, key)
	if e.waits {
		if p.waiting[e.pool]--; p.waiting[e.pool] <= 0 {
			delete(p.waiting, e.pool)
		}
	}
	return true
}

// addProvisional records the proxy's verdict v about j (r.mu held).
func (r *Reconciler) addProvisional(j *engine.Job, v Verdict) {
	e := provEntry{admitted: v.Admitted, at: r.Now(), v: engine.Verdict{Namespace: j.Namespace, JobID: j.ID,
		Class: v.Class, State: engine.Queued, QueuedAt: j.QueuedAt, Reason: v.Reason,
		Position: v.Position, TenantPosition: v.TenantPosition, Checks: v.Checks},
		pool: j.Pool(), waits: !v.Admitted && engine.WaitsForCapacity(v.Checks)}
	if v.Admitted {
		e.use = engine.Request(j)
	}
	r.plMu.Lock()
	defer r.plMu.Unlock()
	r.prov.put(j.Key(), e)
	r.merged = nil
}

// heldSinceAhead tells why jobs the proxy held since the latest plan,
// waiting for capacity in j's node pool, hold j back as the plan's
// Waiting would (engine Plan.WaitersAhead); "" when none does.
func (r *Reconciler) heldSinceAhead(j *engine.Job) string {
	pool, key := j.Pool(), j.Key()
	r.plMu.RLock()
	defer r.plMu.RUnlock()
	n := r.prov.waiting[pool]
	if e, ok := r.prov.entries[key]; ok && e.waits {
		n-- // an earlier submission of j itself
	}
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("order: %d jobs of node pool %s held since the last cycle wait for capacity; the next cycle admits in queue order", n, pool)
}

// dropProvisional forgets the proxy's decision about key (Nomad refused
// the write).
func (r *Reconciler) dropProvisional(key string) {
	r.plMu.Lock()
	defer r.plMu.Unlock()
	if r.prov.del(key) {
		r.merged = nil
	}
}

// merge returns a copy of pl with the entries applied: held jobs inserted
// into the queue at their answered positions (later positions shift),
// admitted jobs' requests added to their tenant's usage. pl is not
// changed: it is shared with readers. One pass over the queue, after
// sorting the held entries: O(queue + held log held), where inserting
// them one at a time renumbered the whole queue per entry.
func (p *provisional) merge(pl *engine.Plan) *engine.Plan {
	cp := *pl
	cp.Tenants = append([]engine.TenantStatus(nil), pl.Tenants...)
	cp.Verdicts = make(map[string]*engine.Verdict, len(pl.Verdicts)+len(p.entries))
	for k, v := range pl.Verdicts {
		cp.Verdicts[k] = v
	}
	tenant := map[string]*engine.TenantStatus{}
	for i := range cp.Tenants {
		tenant[cp.Tenants[i].Namespace] = &cp.Tenants[i]
	}
	held := make([]string, 0, len(p.entries))
	for k, e := range p.entries {
		t := tenant[e.v.Namespace]
		if !e.admitted {
			held = append(held, k)
			if t != nil {
				t.Queued++
			}
			continue
		}
		if t != nil {
			t.Usage = t.Usage.Clone()
			t.Usage.Add(e.use)
		}
	}
	if len(held) == 0 {
		return &cp
	}
	sort.Slice(held, func(a, b int) bool { return p.before(held[a], held[b]) })
	cp.Queue = p.interleave(pl.Queue, held)
	// A queued job's verdict is its queue entry (engine: a copy of it), so
	// job why shows the same shifted position as the queue.
	keys := p.queueKeys(pl)
	qi := 0
	for i := range cp.Queue {
		if qi < len(keys) && cp.Queue[i].JobID == pl.Queue[qi].JobID && cp.Queue[i].Namespace == pl.Queue[qi].Namespace {
			cp.Verdicts[keys[qi]] = &cp.Queue[i]
			qi++
			continue
		}
		cp.Verdicts[cp.Queue[i].Namespace+"/"+cp.Queue[i].JobID] = &cp.Queue[i]
	}
	return &cp
}

// queueKeys returns the keys of pl's queue, in order.
func (p *provisional) queueKeys(pl *engine.Plan) []string {
	if p.keysOf != pl {
		p.keys = make([]string, len(pl.Queue))
		for i := range pl.Queue {
			p.keys[i] = pl.Queue[i].Namespace + "/" + pl.Queue[i].JobID
		}
		p.keysOf = pl
	}
	return p.keys
}

// before orders held entries for the merge: by answered position; on a
// tie the later answer first (the proxy answered it a position already
// taken by the earlier one, so it ranks ahead of it); then by key.
func (p *provisional) before(a, b string) bool {
	ea, eb := p.entries[a], p.entries[b]
	switch {
	case ea.v.Position != eb.v.Position:
		return ea.v.Position < eb.v.Position
	case !ea.at.Equal(eb.at):
		return ea.at.After(eb.at)
	}
	return a < b
}

// interleave returns queue q with the held entries (sorted) placed at
// their answered positions, each after the one before it (clamped to the
// end; a position below 1 goes last), and every position and tenant
// position renumbered once.
func (p *provisional) interleave(q []engine.Verdict, held []string) []engine.Verdict {
	out := make([]engine.Verdict, 0, len(q)+len(held))
	var last []engine.Verdict
	qi := 0
	for _, k := range held {
		v := p.entries[k].v
		if v.Position < 1 {
			last = append(last, v)
			continue
		}
		for len(out) < v.Position-1 && qi < len(q) {
			out = append(out, q[qi])
			qi++
		}
		out = append(out, v)
	}
	out = append(append(out, q[qi:]...), last...)
	tenantPos := map[string]int{}
	for i := range out {
		tenantPos[out[i].Namespace]++
		out[i].Position, out[i].TenantPosition = i+1, tenantPos[out[i].Namespace]
	}
	return out
}

// position returns where j, with class, stands in the latest plan's queue
// plus the jobs the proxy held since, and the queue's length with j: a
// binary search in the plan's index and a walk of the held entries only.
func (r *Reconciler) position(j *engine.Job, class string) (overall, tenant, total int) {
	r.plMu.Lock()
	defer r.plMu.Unlock()
	if r.latest == nil {
		return 1, 1, 1
	}
	if r.pos == nil {
		r.pos = engine.NewPositions(r.latest, r.Config)
	}
	overall, tenant = r.pos.Of(j, class)
	total = len(r.latest.Queue) + 1
	self := j.Key()
	for key, e := range r.prov.entries {
		if e.admitted || key == self {
			continue
		}
		total++
		if r.pos.Ahead(e.v.Namespace, e.v.Class, e.v.QueuedAt, j, class) {
			overall++
			if e.v.Namespace == j.Namespace {
				tenant++
			}
		}
	}
	return overall, tenant, total
}
