package engine

import "github.com/allot-sh/allot/governor/quota"

// Lending is what each tenant of a plan borrows from its cohort and lends to
// it, by namespace. The API serves it (GET /allot/v1/tenants), so clients
// render these numbers instead of repeating the rule.
type Lending struct {
	// Borrowed is usage above the nominal quota of each resource the tenant
	// declares (with only a limit declared, all its usage is borrowed).
	Borrowed map[string]quota.Vector
	// Lent attributes the cohort's borrowing of a resource to its lenders
	// in proportion to their idle lendable quota (min(lend cap, quota −
	// usage)), capped at that amount: a borrower takes from the idle
	// lendable quota of all other members together (see account.borrowable).
	Lent map[string]quota.Vector
}

// LendingOf computes Lending over every tenant of ts (all tenants: a
// lender's share depends on the whole cohort, whoever may read it).
func LendingOf(ts []TenantStatus) Lending {
	type pool struct{ borrowed, idle quota.Vector }
	pools := map[string]*pool{}
	out := Lending{Borrowed: map[string]quota.Vector{}, Lent: map[string]quota.Vector{}}
	for i := range ts {
		t := &ts[i]
		p := pools[t.Cohort]
		if p == nil {
			p = &pool{borrowed: quota.Vector{}, idle: quota.Vector{}}
			pools[t.Cohort] = p
		}
		b := quota.Vector{}
		for res, u := range t.Usage {
			if q := t.Quota[res]; t.Governs(res) && u > q {
				b[res] = u - q
				p.borrowed[res] += u - q
			}
		}
		out.Borrowed[t.Namespace] = b
		for res := range t.Quota {
			p.idle[res] += idleLendable(t, res)
		}
	}
	for i := range ts {
		t := &ts[i]
		p, lent := pools[t.Cohort], quota.Vector{}
		for res := range t.Quota {
			mine, all, b := idleLendable(t, res), p.idle[res], p.borrowed[res]
			if mine > 0 && all > 0 && b > 0 {
				lent[res] = min64(mine, b*mine/all)
			}
		}
		out.Lent[t.Namespace] = lent
	}
	return out
}

// idleLendable is the tenant's unused nominal quota of res that it may lend.
func idleLendable(t *TenantStatus, res string) int64 {
	unused := t.Quota[res] - t.Usage[res]
	if unused <= 0 {
		return 0
	}
	return min64(unused, t.LendCap(res))
}
