package reconcile

import (
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
}

// provEntry is one proxy decision.
type provEntry struct {
	v        engine.Verdict
	admitted bool
	use      quota.Vector
	at       time.Time
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
			delete(p.entries, key)
		}
	}
}

// addProvisional records the proxy's verdict v about j (r.mu held).
func (r *Reconciler) addProvisional(j *engine.Job, v Verdict) {
	e := provEntry{admitted: v.Admitted, at: r.Now(), v: engine.Verdict{Namespace: j.Namespace, JobID: j.ID,
		Class: v.Class, State: engine.Queued, QueuedAt: j.QueuedAt, Reason: v.Reason,
		Position: v.Position, TenantPosition: v.TenantPosition, Checks: v.Checks}}
	if v.Admitted {
		e.use = engine.Request(j)
	}
	r.plMu.Lock()
	defer r.plMu.Unlock()
	if r.prov.entries == nil {
		r.prov.entries = map[string]provEntry{}
	}
	r.prov.entries[j.Key()] = e
	r.merged = nil
}

// dropProvisional forgets the proxy's decision about key (Nomad refused
// the write).
func (r *Reconciler) dropProvisional(key string) {
	r.plMu.Lock()
	defer r.plMu.Unlock()
	if _, ok := r.prov.entries[key]; ok {
		delete(r.prov.entries, key)
		r.merged = nil
	}
}

// merge returns a copy of pl with the entries applied: held jobs inserted
// into the queue at their answered position (later positions shift),
// admitted jobs' requests added to their tenant's usage. pl is not
// changed: it is shared with readers.
func (p *provisional) merge(pl *engine.Plan) *engine.Plan {
	cp := *pl
	cp.Queue = append([]engine.Verdict(nil), pl.Queue...)
	cp.Tenants = append([]engine.TenantStatus(nil), pl.Tenants...)
	cp.Verdicts = make(map[string]*engine.Verdict, len(pl.Verdicts)+len(p.entries))
	for k, v := range pl.Verdicts {
		cp.Verdicts[k] = v
	}
	tenant := map[string]*engine.TenantStatus{}
	for i := range cp.Tenants {
		tenant[cp.Tenants[i].Namespace] = &cp.Tenants[i]
	}
	keys := make([]string, 0, len(p.entries))
	for k := range p.entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		ea, eb := p.entries[keys[a]], p.entries[keys[b]]
		if ea.v.Position != eb.v.Position {
			return ea.v.Position < eb.v.Position
		}
		return keys[a] < keys[b]
	})
	for _, k := range keys {
		e := p.entries[k]
		t := tenant[e.v.Namespace]
		if e.admitted {
			if t != nil {
				t.Usage = t.Usage.Clone()
				t.Usage.Add(e.use)
			}
			continue
		}
		cp.Queue = insertQueued(cp.Queue, e.v)
		v := e.v
		cp.Verdicts[k] = &v
		if t != nil {
			t.Queued++
		}
	}
	return &cp
}

// insertQueued puts v at its position (clamped) and renumbers the
// positions of the whole queue and of v's tenant.
func insertQueued(q []engine.Verdict, v engine.Verdict) []engine.Verdict {
	at := v.Position - 1
	if at < 0 || at > len(q) {
		at = len(q)
	}
	q = append(q, engine.Verdict{})
	copy(q[at+1:], q[at:])
	q[at] = v
	tenantPos := 0
	for i := range q {
		q[i].Position = i + 1
		if q[i].Namespace == v.Namespace {
			tenantPos++
			q[i].TenantPosition = tenantPos
		}
	}
	return q
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
	prio, share := r.Config.Classes[class].Priority, shareOf(r.latest, j.Namespace)
	for key, e := range r.prov.entries {
		if e.admitted || key == j.Key() {
			continue
		}
		total++
		vp, vs := r.Config.Classes[e.v.Class].Priority, shareOf(r.latest, e.v.Namespace)
		if vp > prio || (vp == prio && (vs < share || (vs == share && !e.v.QueuedAt.After(j.QueuedAt)))) {
			overall++
			if e.v.Namespace == j.Namespace {
				tenant++
			}
		}
	}
	return overall, tenant, total
}

func shareOf(p *engine.Plan, ns string) float64 {
	for _, t := range p.Tenants {
		if t.Namespace == ns {
			return t.DominantShare
		}
	}
	return 0
}
