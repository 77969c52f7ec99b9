package idle

import (
	"context"
	"sort"
	"time"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/ledger"
)

// Answer builds /allot/v1/idle for a caller: candidates and policies of
// the namespaces it may read; zombies (which name nodes, not tenants) for
// management tokens only.
func (s *Service) Answer(canRead func(ns string) bool, management bool) allotapi.IdleAnswer {
	out := allotapi.IdleAnswer{Period: s.o.Period, Candidates: []allotapi.IdleCandidate{}, Zombies: []allotapi.IdleZombie{},
		Policies: []allotapi.IdlePolicy{}}
	tenants := s.Tenants()
	for _, c := range s.o.Detector.Candidates() {
		if management || canRead(c.Namespace) {
			out.Candidates = append(out.Candidates, candidate(c, s.Tenant(c.Namespace).Policy.Action))
		}
	}
	if management {
		out.Watched = s.o.Detector.Watched()
		for _, z := range s.o.Detector.ZombieList() {
			out.Zombies = append(out.Zombies, allotapi.IdleZombie{Node: z.Node, DeviceID: z.DeviceID, Since: z.Since,
				LastSeen: z.LastSeen, MemoryMiB: z.MemoryMiB, Processes: z.Processes})
		}
	}
	for ns, t := range tenants {
		if management || canRead(ns) {
			out.Policies = append(out.Policies, policy(t))
		}
	}
	sort.Slice(out.Policies, func(i, j int) bool { return out.Policies[i].Namespace < out.Policies[j].Namespace })
	out.Totals = s.totals(canRead, management, tenants)
	return out
}

// totals reads the ledger's per-namespace figures for the caller's
// namespaces; a ledger error leaves them out (logged).
func (s *Service) totals(canRead func(string) bool, management bool, tenants map[string]Tenant) []allotapi.IdleTotals {
	if s.o.Ledger == nil {
		return nil
	}
	q := ledger.AuditQuery{}
	if !management {
		q.Namespaces = []string{}
		for ns := range tenants {
			if canRead(ns) {
				q.Namespaces = append(q.Namespaces, ns)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, err := LedgerTotals(ctx, s.o.Ledger, q)
	if err != nil {
		s.o.Log.Warn("reading idle totals from the ledger failed", "error", err)
		return nil
	}
	out := []allotapi.IdleTotals{}
	for _, t := range ts {
		out = append(out, allotapi.IdleTotals(*t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}

func candidate(c Candidate, a Action) allotapi.IdleCandidate {
	out := allotapi.IdleCandidate{Namespace: c.Namespace, JobID: c.JobID, AllocID: c.AllocID, PriorityClass: c.Priority,
		Production: c.Production, Devices: c.Devices, Class: c.Class, Step: string(c.Step), IdleSince: c.IdleSince,
		SuspectAt: c.SuspectAt, WarnAt: c.WarnAt, WarnedAt: c.WarnedAt, DueAt: c.DueAt, Action: string(a), IdleDeviceSeconds: c.IdleDeviceSeconds,
		Samples: make([]allotapi.IdleSample, 0, len(c.Samples))}
	if c.WarnOnly() {
		out.Action = string(ActionWarn)
	}
	if c.Exemption != nil {
		out.Exemption = &allotapi.IdleExemption{Until: c.Exemption.Until, Reason: c.Exemption.Reason}
	}
	for _, s := range c.Samples {
		out.Samples = append(out.Samples, allotapi.IdleSample(s))
	}
	return out
}

func policy(t Tenant) allotapi.IdlePolicy {
	p := allotapi.IdlePolicy{Namespace: t.Namespace, Window: t.Policy.Window, ThresholdPct: t.Policy.ThresholdPct,
		MemoryMiB: t.Policy.MemoryMiB, Grace: t.Policy.Grace, Notice: t.Policy.Notice, Action: string(t.Policy.Action), UnclaimedTTL: t.Policy.UnclaimedTTL,
		Problems: t.Problems}
	if len(t.Exempt) > 0 {
		p.Exemptions = map[string]allotapi.IdleExemption{}
		for job, e := range t.Exempt {
			p.Exemptions[job] = allotapi.IdleExemption(e)
		}
	}
	return p
}
