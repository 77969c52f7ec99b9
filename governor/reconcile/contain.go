package reconcile

import (
	"fmt"
	"sort"
	"strings"

	"github.com/allot-sh/allot/governor/engine"
)

// Causes of the containment decisions (journal and decisions API).
const (
	// CauseClass: a job written straight to Nomad names a class its
	// tenant may not use, or an unknown one.
	CauseClass = "class"
	// CausePriority: a job written straight to Nomad runs at a Nomad
	// priority above its class's.
	CausePriority = "priority"
)

// contain governs jobs written straight to Nomad (Direct: no valid
// admission seal, whatever their allot.* meta says) the way admission
// governs submissions (audit #11): in a governed namespace, a direct job
// whose class its tenant may not use (or an unknown class), or whose Nomad
// Priority exceeds its class's, is held with the reason; it is admitted
// again through the queue, where its class is checked and the actuator
// sets the class's priority. A dispatched child, which Nomad cannot
// update, is stopped instead. Such jobs leave the snapshot as Stopped, so
// the engine neither reserves for them nor picks them as victims in this
// cycle. Over-limit direct jobs are the engine's (holdDirectOverLimit).
func contain(cfg engine.Config, s *engine.Snapshot) []engine.Decision {
	var out []engine.Decision
	for i, j := range s.Jobs {
		t := s.Tenants[j.Namespace]
		if j.State != engine.Direct || t == nil {
			continue
		}
		d, ok := containOne(cfg, t, j)
		if !ok {
			continue
		}
		d.QueuedAt = s.Now
		out = append(out, d)
		cp := *j
		cp.State = engine.Stopped
		s.Jobs[i] = &cp
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Namespace+"/"+out[a].JobID < out[b].Namespace+"/"+out[b].JobID })
	return out
}

// containOne returns the decision for direct job j of tenant t, if it
// breaks its tenant's class rules.
func containOne(cfg engine.Config, t *engine.Tenant, j *engine.Job) (engine.Decision, bool) {
	name := j.Class
	if name == "" {
		name = t.DefaultClass
	}
	d := engine.Decision{Action: engine.Hold, Namespace: j.Namespace, JobID: j.ID, Version: j.Version, Class: name}
	if j.Dispatched {
		d.Action = engine.Stop
	}
	cl, known := cfg.Classes[name]
	switch {
	case !known:
		d.Cause = CauseClass
		d.Reason = fmt.Sprintf("written straight to Nomad with unknown class %q; tenant %s may use: %s", name, j.Namespace, allowed(cfg, t))
	case !t.MayUse(name, cl.Restricted):
		d.Cause = CauseClass
		d.Reason = fmt.Sprintf("written straight to Nomad with class %q, which tenant %s may not use; it may use: %s", name, j.Namespace, allowed(cfg, t))
	case j.Priority > cl.Priority:
		d.Cause, d.Priority = CausePriority, cl.Priority
		d.Reason = fmt.Sprintf("written straight to Nomad at priority %d, above class %s's %d", j.Priority, name, cl.Priority)
	default:
		return engine.Decision{}, false
	}
	if d.Action == engine.Stop {
		d.Reason += "; a dispatched job cannot be held: stopped"
	} else {
		d.Reason += "; held until the queue admits it at its class's priority"
	}
	return d, true
}

// allowed lists the classes tenant t may use.
func allowed(cfg engine.Config, t *engine.Tenant) string {
	var names []string
	for name, cl := range cfg.Classes {
		if t.MayUse(name, cl.Restricted) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

// withContained puts the containment decisions first in plan, with a
// verdict each that explains them.
func withContained(plan *engine.Plan, held []engine.Decision) {
	if len(held) == 0 {
		return
	}
	plan.Decisions = append(held, plan.Decisions...)
	for _, d := range held {
		plan.Verdicts[d.Namespace+"/"+d.JobID] = &engine.Verdict{Namespace: d.Namespace, JobID: d.JobID, Class: d.Class,
			State: engine.Queued, QueuedAt: d.QueuedAt, Reason: d.Cause + ": " + d.Reason,
			Checks: []engine.Check{{Name: d.Cause, Detail: d.Reason}}}
	}
}
