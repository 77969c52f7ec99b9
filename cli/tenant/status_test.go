package tenant

import (
	"testing"

	"github.com/shoenig/test/must"

	gq "github.com/allot-sh/allot/governor/quota"
)

// st builds a tenant status for borrowing tests.
func st(ns, cohort string, q, usage gq.Vector) Status {
	return Status{Namespace: ns, Cohort: cohort, Quota: q, Usage: usage, Limit: gq.Vector{}, Lend: gq.Vector{}}
}

func (s Status) lend(v gq.Vector) Status  { s.Lend = v; return s }
func (s Status) limit(v gq.Vector) Status { s.Limit = v; return s }

func TestBorrowing(t *testing.T) {
	tests := map[string]struct {
		in       []Status
		borrowed []gq.Vector
		lent     []gq.Vector
	}{
		"one lender": {
			in:       []Status{st("a", "c", gq.Vector{"gpu": 8}, gq.Vector{"gpu": 12}), st("b", "c", gq.Vector{"gpu": 8}, gq.Vector{"gpu": 2})},
			borrowed: []gq.Vector{{"gpu": 4}, {}},
			lent:     []gq.Vector{{}, {"gpu": 4}},
		},
		"two lenders share in proportion to idle quota": {
			in: []Status{st("a", "c", gq.Vector{"gpu": 0}, gq.Vector{"gpu": 6}),
				st("b", "c", gq.Vector{"gpu": 8}, gq.Vector{"gpu": 0}), st("d", "c", gq.Vector{"gpu": 4}, gq.Vector{"gpu": 0})},
			borrowed: []gq.Vector{{"gpu": 6}, {}, {}},
			lent:     []gq.Vector{{}, {"gpu": 4}, {"gpu": 2}},
		},
		"lend cap limits what is lent": {
			in: []Status{st("a", "c", gq.Vector{"gpu": 0}, gq.Vector{"gpu": 3}),
				st("b", "c", gq.Vector{"gpu": 8}, gq.Vector{}).lend(gq.Vector{"gpu": 2})},
			borrowed: []gq.Vector{{"gpu": 3}, {}},
			lent:     []gq.Vector{{}, {"gpu": 2}},
		},
		"other cohorts do not lend": {
			in:       []Status{st("a", "x", gq.Vector{"gpu": 1}, gq.Vector{"gpu": 3}), st("b", "y", gq.Vector{"gpu": 8}, gq.Vector{})},
			borrowed: []gq.Vector{{"gpu": 2}, {}},
			lent:     []gq.Vector{{}, {}},
		},
		"limit only: all usage is borrowed": {
			in:       []Status{st("a", "c", gq.Vector{}, gq.Vector{"gpu": 2, "cpu": 500}).limit(gq.Vector{"gpu": 4})},
			borrowed: []gq.Vector{{"gpu": 2}},
			lent:     []gq.Vector{{}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			Borrowing(tc.in)
			for i := range tc.in {
				must.Eq(t, tc.borrowed[i], tc.in[i].Borrowed, must.Sprintf("borrowed of %s", tc.in[i].Namespace))
				must.Eq(t, tc.lent[i], tc.in[i].Lent, must.Sprintf("lent of %s", tc.in[i].Namespace))
			}
		})
	}
}
