package engine

// QueuePosition returns where job j, queued now with class class in
// tenant ns, would stand in plan p's queue: its 1-based position overall
// and within its tenant. It orders like Decide does, from the shares the
// plan recorded, so the proxy can answer without a whole cycle.
func QueuePosition(p *Plan, cfg Config, j *Job, class string) (overall, tenant int) {
	shares := map[string]float64{}
	for _, t := range p.Tenants {
		shares[t.Namespace] = t.DominantShare
	}
	prio := cfg.Classes[class].Priority
	share := shares[j.Namespace]
	overall, tenant = 1, 1
	for _, v := range p.Queue {
		if v.Namespace == j.Namespace && v.JobID == j.ID {
			continue
		}
		vp, vs := cfg.Classes[v.Class].Priority, shares[v.Namespace]
		ahead := vp > prio || (vp == prio && (vs < share || (vs == share && !v.QueuedAt.After(j.QueuedAt))))
		if ahead {
			overall++
			if v.Namespace == j.Namespace {
				tenant++
			}
		}
	}
	return overall, tenant
}
