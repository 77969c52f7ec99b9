package engine

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/quota"
)

// lendingTenant builds a tenant status for lending tests.
func lendingTenant(ns, cohort string, q, usage quota.Vector) TenantStatus {
	return TenantStatus{Tenant: Tenant{Tenant: quota.Tenant{Namespace: ns, Cohort: cohort, Quota: q,
		Limit: quota.Vector{}, Lend: quota.Vector{}}}, Usage: usage}
}

func (s TenantStatus) lend(v quota.Vector) TenantStatus  { s.Lend = v; return s }
func (s TenantStatus) limit(v quota.Vector) TenantStatus { s.Limit = v; return s }

func TestLendingOf(t *testing.T) {
	tests := map[string]struct {
		in       []TenantStatus
		borrowed []quota.Vector
		lent     []quota.Vector
	}{
		"one lender": {
			in:       []TenantStatus{lendingTenant("a", "c", quota.Vector{"gpu": 8}, quota.Vector{"gpu": 12}), lendingTenant("b", "c", quota.Vector{"gpu": 8}, quota.Vector{"gpu": 2})},
			borrowed: []quota.Vector{{"gpu": 4}, {}},
			lent:     []quota.Vector{{}, {"gpu": 4}},
		},
		"two lenders share in proportion to idle quota": {
			in: []TenantStatus{lendingTenant("a", "c", quota.Vector{"gpu": 0}, quota.Vector{"gpu": 6}),
				lendingTenant("b", "c", quota.Vector{"gpu": 8}, quota.Vector{"gpu": 0}), lendingTenant("d", "c", quota.Vector{"gpu": 4}, quota.Vector{"gpu": 0})},
			borrowed: []quota.Vector{{"gpu": 6}, {}, {}},
			lent:     []quota.Vector{{}, {"gpu": 4}, {"gpu": 2}},
		},
		"lend cap limits what is lent": {
			in: []TenantStatus{lendingTenant("a", "c", quota.Vector{"gpu": 0}, quota.Vector{"gpu": 3}),
				lendingTenant("b", "c", quota.Vector{"gpu": 8}, quota.Vector{}).lend(quota.Vector{"gpu": 2})},
			borrowed: []quota.Vector{{"gpu": 3}, {}},
			lent:     []quota.Vector{{}, {"gpu": 2}},
		},
		"other cohorts do not lend": {
			in:       []TenantStatus{lendingTenant("a", "x", quota.Vector{"gpu": 1}, quota.Vector{"gpu": 3}), lendingTenant("b", "y", quota.Vector{"gpu": 8}, quota.Vector{})},
			borrowed: []quota.Vector{{"gpu": 2}, {}},
			lent:     []quota.Vector{{}, {}},
		},
		"limit only: all usage is borrowed": {
			in:       []TenantStatus{lendingTenant("a", "c", quota.Vector{}, quota.Vector{"gpu": 2, "cpu": 500}).limit(quota.Vector{"gpu": 4})},
			borrowed: []quota.Vector{{"gpu": 2}},
			lent:     []quota.Vector{{}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := LendingOf(tc.in)
			for i, ts := range tc.in {
				must.Eq(t, tc.borrowed[i], got.Borrowed[ts.Namespace], must.Sprintf("borrowed of %s", ts.Namespace))
				must.Eq(t, tc.lent[i], got.Lent[ts.Namespace], must.Sprintf("lent of %s", ts.Namespace))
			}
		})
	}
}
