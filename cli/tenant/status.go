package tenant

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/nomad/api"

	gapi "github.com/allot-sh/allot/governor/api"
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
	// share of what its cohort borrows (see Borrowing).
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
// governor's accounting, and works out borrowing per cohort.
func Collect(ctx context.Context, nc *api.Client, gov *gapi.Client, classes map[string]bool) (*View, error) {
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
	Borrowing(view.Tenants)
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
func mergeGovernor(s *Status, t gapi.Tenant) {
	s.Cohort, s.Weight, s.Classes, s.DefaultClass = t.Cohort, t.Weight, t.Classes, t.DefaultClass
	s.Quota, s.Limit, s.Lend = gq.Vector(t.Quota), gq.Vector(t.Limit), gq.Vector(t.Lend)
	s.Usage, s.Queued, s.DominantShare = gq.Vector(t.Usage), t.Queued, t.DominantShare
	if t.Error != "" {
		s.Error = t.Error
	}
}

// Borrowing fills Borrowed and Lent. Borrowed is usage above quota (0 when
// only a limit is declared). The
// governor pools borrowing per cohort (a borrower takes from the idle
// lendable quota of all other members), so Lent attributes the cohort's
// borrowing of a resource to its lenders in proportion to their idle
// lendable quota (min(lend cap, quota − usage)), capped at that amount.
func Borrowing(ts []Status) {
	type pool struct{ borrowed, idle gq.Vector }
	pools := map[string]*pool{}
	for i := range ts {
		t := &ts[i]
		t.Borrowed, t.Lent = gq.Vector{}, gq.Vector{}
		p := pools[t.Cohort]
		if p == nil {
			p = &pool{borrowed: gq.Vector{}, idle: gq.Vector{}}
			pools[t.Cohort] = p
		}
		for res, u := range t.Usage {
			if q := t.Quota[res]; t.governs(res) && u > q {
				t.Borrowed[res] = u - q
				p.borrowed[res] += u - q
			}
		}
		for res := range t.Quota {
			p.idle[res] += idle(t, res)
		}
	}
	for i := range ts {
		t := &ts[i]
		p := pools[t.Cohort]
		for res := range t.Quota {
			mine, all, b := idle(t, res), p.idle[res], p.borrowed[res]
			if mine > 0 && all > 0 && b > 0 {
				t.Lent[res] = min64(mine, b*mine/all)
			}
		}
	}
}

// idle is the tenant's unused nominal quota of res that it may lend.
func idle(t *Status, res string) int64 {
	unused := t.Quota[res] - t.Usage[res]
	if unused <= 0 {
		return 0
	}
	return min64(unused, t.lendCap(res))
}

// governs reports whether the tenant declares res (the governor checks
// only declared resources).
func (s *Status) governs(res string) bool {
	_, q := s.Quota[res]
	_, l := s.Limit[res]
	_, d := s.Lend[res]
	return q || l || d
}

func (s *Status) lendCap(res string) int64 {
	if n, ok := s.Lend[res]; ok {
		return n
	}
	return s.Quota[res]
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}
