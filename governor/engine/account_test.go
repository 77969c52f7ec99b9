package engine

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/allot-sh/allot/governor/quota"
	"github.com/shoenig/test/must"
)

// borrowableByHand is borrowable summed over the cohort's members, as it
// was before the cohort kept its sums.
func borrowableByHand(a *account, r string) int64 {
	var free, borrowed int64
	for _, m := range a.cohort.members {
		if m == a {
			continue
		}
		q, u := m.t.Quota[r], m.usage[r]
		free += max64(0, min64(m.t.LendCap(r), q-u))
		borrowed += max64(0, u-q)
	}
	return max64(0, free-borrowed)
}

// TestPropertyBorrowableFollowsUsage changes random members' usage in
// random ways (admissions, releases, a trial's swapped vector and its
// restore) and checks after each change that every member's borrowable
// equals the sum over the other members.
func TestPropertyBorrowableFollowsUsage(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	res := []string{"gpu", "cpu", "memory"}
	for round := 0; round < 50; round++ {
		tenants := map[string]*Tenant{}
		for i := 0; i < 2+r.Intn(8); i++ {
			b := mkTenant(fmt.Sprintf("t%d", i)).Quota("gpu", int64(r.Intn(16))).Quota("cpu", int64(r.Intn(64000)))
			if r.Intn(3) == 0 {
				b.Lend("gpu", int64(r.Intn(8)))
			}
			tenants[b.t.Namespace] = b.Build()
		}
		accts := newAccounts(tenants)
		var list []*account
		for _, a := range accts {
			list = append(list, a)
		}
		for step := 0; step < 200; step++ {
			a := list[r.Intn(len(list))]
			v := quota.Vector{res[r.Intn(2)]: int64(1 + r.Intn(12)), res[2]: int64(r.Intn(4))}
			switch r.Intn(4) {
			case 0, 1:
				a.use(v)
			case 2:
				a.sub(v)
			case 3:
				trial := a.usage.Clone()
				trial.Add(v)
				saved := a.setUsage(trial)
				checkBorrowable(t, list, res, round, step)
				a.setUsage(saved)
			}
			checkBorrowable(t, list, res, round, step)
		}
	}
}

func checkBorrowable(t *testing.T, list []*account, res []string, round, step int) {
	t.Helper()
	for _, a := range list {
		for _, r := range res {
			must.Eq(t, borrowableByHand(a, r), a.borrowable(r),
				must.Sprintf("round %d step %d: %s %s", round, step, a.t.Namespace, r))
		}
	}
}
