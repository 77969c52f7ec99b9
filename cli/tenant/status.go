package tenant

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/allotapi"
	gq "github.com/allot-sh/allot/governor/quota"
)

// Status is one tenant as allotctl shows it: the quota from its namespace
// meta (checked with the governor's parser) and, when the governor is
// reachable, what the governor accounts for it.
type Status struct {
	Namespace    string
	Cohort       string
	Weight       float64
	Classes      []string `json:",omitempty"`
	DefaultClass string
	// Quota, Limit and Lend are in effect: the governor's view when it is
	// reachable (it keeps the last valid quota while the meta is invalid),
	// else the meta as parsed.
	Quota, Limit, Lend gq.Vector
	// Usage, Queued and DominantShare come from the governor.
	Usage         gq.Vector
	Queued        int
	DominantShare float64
	// Borrowed is usage above the nominal quota; Lent is this tenant's
	// share of what its cohort borrows. The governor computes both
	// (engine.LendingOf); empty when it is unreachable.
	Borrowed, Lent gq.Vector
	// Error is the problem of the namespace's quota meta.
	Error string `json:",omitempty"`
}

// View is the whole picture `tenant list` and `tenant status` print.
type View struct {
	Tenants []Status
	// GovernorError says why usage is missing (governor unreachable).
	GovernorError string `json:",omitempty"`
}

// Collect reads governed namespaces from Nomad and, when it answers, the
// governor's accounting (usage, borrowing, lending).
func Collect(ctx context.Context, nc *api.Client, gov *allotapi.Client, classes map[string]bool) (*View, error) {
	nss, _, err := nc.Namespaces().List((&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	byNS := map[string]*Status{}
	for _, ns := range nss {
		if !gq.Governed(ns.Meta) {
			continue
		}
		byNS[ns.Name] = fromMeta(ns.Name, ns.Meta, classes)
	}
	view := &View{}
	list, err := gov.Tenants(ctx)
	if err != nil {
		view.GovernorError = err.Error()
	} else {
		for _, t := range list.Tenants {
			if s := byNS[t.Namespace]; s != nil {
				mergeGovernor(s, t)
			}
		}
	}
	for _, s := range byNS {
		view.Tenants = append(view.Tenants, *s)
	}
	sort.Slice(view.Tenants, func(i, j int) bool { return view.Tenants[i].Namespace < view.Tenants[j].Namespace })
	return view, nil
}

func fromMeta(ns string, meta map[string]string, classes map[string]bool) *Status {
	t, err := gq.Parse(ns, meta, classes)
	s := &Status{Namespace: ns, Cohort: t.Cohort, Weight: t.Weight, Classes: t.Classes, DefaultClass: t.DefaultClass,
		Quota: t.Quota, Limit: t.Limit, Lend: t.Lend}
	if err != nil {
		s.Error = err.Error()
	}
	return s
}

// mergeGovernor takes what the governor has in effect for the tenant.
func mergeGovernor(s *Status, t allotapi.Tenant) {
	s.Cohort, s.Weight, s.Classes, s.DefaultClass = t.Cohort, t.Weight, t.Classes, t.DefaultClass
	s.Quota, s.Limit, s.Lend = gq.Vector(t.Quota), gq.Vector(t.Limit), gq.Vector(t.Lend)
	s.Usage, s.Queued, s.DominantShare = gq.Vector(t.Usage), t.Queued, t.DominantShare
	s.Borrowed, s.Lent = gq.Vector(t.Borrowed), gq.Vector(t.Lent)
	if t.Error != "" {
		s.Error = t.Error
	}
}
