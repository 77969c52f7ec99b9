package engine

import (
	"math"
	"sort"

	"github.com/allot-sh/allot/governor/quota"
)

// account is one tenant's accounting during a cycle.
type account struct {
	t      *Tenant
	usage  quota.Vector
	share  float64
	queued int
	cohort *cohort
	// version counts changes of usage during the cycle.
	version uint64
	// claimed sums what the tenant's preemptors waiting for their
	// victims to stop will take (preempt.go): not usage yet, but its
	// further reclaims must count it.
	claimed quota.Vector
	// lend caches lendable per resource: it depends on the members'
	// quotas and lending caps only, which do not change while the
	// account lives.
	lend map[string]int64
	// classChecks caches checkClass per class name: it depends on the
	// tenant and the configured classes only.
	classChecks map[string]Check
}

// cohort is a sharing group of tenants.
type cohort struct {
	name    string
	members []*account
	// governed lists the resources any member declares; only those are
	// checked against quotas for the cohort's tenants.
	governed map[string]bool
	// nominal sums the members' nominal quotas.
	nominal quota.Vector
	// version counts changes of any member's usage during the cycle.
	version uint64
	// sums holds, per resource asked for so far, what the members can
	// lend and what they borrow (borrowable); add, sub and setUsage keep
	// it current.
	sums map[string]lendSums
}

// lendSums is, for one resource, the cohort members' unused lendable
// nominal quota and their usage beyond their nominal quota.
type lendSums struct{ free, borrowed int64 }

// use adds an admitted request to the tenant's usage.
func (a *account) use(v quota.Vector) {
	a.add(v)
	a.changed()
}

// giveBack takes a preemption victim's usage v out of the tenant's.
func (a *account) giveBack(v quota.Vector) {
	a.sub(v)
	a.changed()
}

// changed moves the usage versions that the check memo and the fair
// walk compare: use and giveBack, not a trial's shifts it takes back.
func (a *account) changed() {
	a.version++
	a.cohort.version++
}

// add and sub change the tenant's usage; every change goes through them
// (or setUsage), so that the cohort's sums stay current.
func (a *account) add(v quota.Vector) {
	a.count(-1)
	a.usage.Add(v)
	a.count(1)
}

func (a *account) sub(v quota.Vector) {
	a.count(-1)
	a.usage.Sub(v)
	a.count(1)
}

// setUsage replaces the tenant's usage vector (a trial of what its share
// would be) and returns the one it replaced.
func (a *account) setUsage(v quota.Vector) quota.Vector {
	old := a.usage
	a.count(-1)
	a.usage = v
	a.count(1)
	return old
}

// count adds (sign 1) or takes out (sign -1) the tenant's part of its
// cohort's sums.
func (a *account) count(sign int64) {
	for r, s := range a.cohort.sums {
		own := a.lendSums(r)
		s.free += sign * own.free
		s.borrowed += sign * own.borrowed
		a.cohort.sums[r] = s
	}
}

// newAccounts builds an account per tenant and the cohorts, in a stable
// order.
func newAccounts(tenants map[string]*Tenant) map[string]*account {
	names := make([]string, 0, len(tenants))
	for ns := range tenants {
		names = append(names, ns)
	}
	sort.Strings(names)
	accts := make(map[string]*account, len(tenants))
	cohorts := map[string]*cohort{}
	for _, ns := range names {
		t := tenants[ns]
		co := cohorts[t.Cohort]
		if co == nil {
			co = &cohort{name: t.Cohort, governed: map[string]bool{}, nominal: quota.Vector{}}
			cohorts[t.Cohort] = co
		}
		a := &account{t: t, usage: quota.Vector{}, cohort: co}
		co.members = append(co.members, a)
		co.nominal.Add(t.Quota)
		for _, v := range []quota.Vector{t.Quota, t.Limit, t.Lend} {
			for r := range v {
				co.governed[r] = true
			}
		}
		accts[ns] = a
	}
	return accts
}

// borrowable is how much of resource r the cohort can still lend to a:
// the other members' unused lendable nominal minus what the other members
// already borrow. The cohort's sums are kept as usage changes: summed
// for every check, they made a cycle's cost grow with the tenants per
// cohort times the queued jobs (docs/benchmarks.md, 1,000 tenants).
func (a *account) borrowable(r string) int64 {
	s := a.cohort.lendSums(r)
	own := a.lendSums(r)
	return max64(0, (s.free-own.free)-(s.borrowed-own.borrowed))
}

// lendSums is what the tenant can lend of resource r and what it borrows.
func (a *account) lendSums(r string) lendSums {
	q, u := a.t.Quota[r], a.usage[r]
	return lendSums{free: max64(0, min64(a.t.LendCap(r), q-u)), borrowed: max64(0, u-q)}
}

// lendSums sums the members' lendSums of resource r, once per cycle and
// resource.
func (co *cohort) lendSums(r string) lendSums {
	if co.sums == nil {
		co.sums = map[string]lendSums{}
	}
	if s, ok := co.sums[r]; ok {
		return s
	}
	var s lendSums
	for _, m := range co.members {
		ms := m.lendSums(r)
		s.free += ms.free
		s.borrowed += ms.borrowed
	}
	co.sums[r] = s
	return s
}

// checkLimit checks usage + req against the tenant's hard limits.
func (a *account) checkLimit(req quota.Vector) Check {
	c := Check{Name: "limit", OK: true, Tenant: a.t.Namespace}
	eachAmount(req, a.limitAmount, c.add)
	return c.withMetaErr(a.t.Err)
}

// withinLimit is checkLimit(req).OK without the check's text.
func (a *account) withinLimit(req quota.Vector) bool {
	return eachAmount(req, a.limitAmount, nil)
}

// limitAmount is the amount of n more of resource r against the
// tenant's hard limit; false when no limit applies to r.
func (a *account) limitAmount(r string, n int64) (Amount, bool) {
	lim, has := a.t.Limit[r]
	if !has || !a.cohort.governed[r] {
		return Amount{}, false
	}
	am := Amount{Resource: r, Need: n, Used: a.usage[r], Cap: lim}
	am.Over = am.Used+am.Need > lim
	am.Never = am.Need > lim
	return am, true
}

// checkQuota checks that req fits the tenant's unused nominal quota plus
// what its cohort can lend.
func (a *account) checkQuota(req quota.Vector) Check {
	c := Check{Name: "quota", OK: true, Tenant: a.t.Namespace, Cohort: a.cohort.name}
	eachAmount(req, a.quotaAmount, c.add)
	return c.withMetaErr(a.t.Err)
}

// withinQuota is checkQuota(req).OK without the check's text.
func (a *account) withinQuota(req quota.Vector) bool {
	return eachAmount(req, a.quotaAmount, nil)
}

// quotaAmount is the amount of n more of resource r against the tenant's
// nominal quota plus what its cohort can lend; false when r is not
// governed.
func (a *account) quotaAmount(r string, n int64) (Amount, bool) {
	if !a.cohort.governed[r] {
		return Amount{}, false
	}
	am := Amount{Resource: r, Need: n, Used: a.usage[r], Cap: a.t.Quota[r], Borrowable: -1}
	if am.Used+am.Need > am.Cap {
		am.Borrowable = a.borrowable(r)
		am.Over = am.Used+am.Need > am.Cap+am.Borrowable
		am.Never = am.Over && am.Need > am.Cap+a.lendable(r)
	}
	return am, true
}

// eachAmount passes the amount of each positive resource of req that
// amountOf judges to add (when set), in name order, and tells whether
// none is over.
func eachAmount(req quota.Vector, amountOf func(r string, n int64) (Amount, bool), add func(Amount)) bool {
	ok := true
	var keys [8]string
	for _, r := range req.AppendKeys(keys[:0]) {
		if req[r] <= 0 {
			continue
		}
		am, applies := amountOf(r, req[r])
		if !applies {
			continue
		}
		ok = ok && !am.Over
		if add != nil {
			add(am)
		}
	}
	return ok
}

// computeShare sets the weighted dominant-resource share: the largest
// fraction of any governed resource's nominal quota that the tenant uses
// (of its own nominal; of the cohort's when it has none of that resource,
// of the cluster's when the cohort has none either), divided by its
// weight. Measured against its own nominal, a tenant with twice the quota
// is served as if it had twice the weight: the order approaches the
// weighted max-min share (weights = nominal quota) the simulator scores.
func (a *account) computeShare(cluster quota.Vector) {
	best := 0.0
	for r, u := range a.usage {
		if u <= 0 || !a.cohort.governed[r] {
			continue
		}
		total := a.t.Quota[r]
		if total <= 0 {
			total = a.cohort.nominal[r]
		}
		if total <= 0 {
			total = cluster[r]
		}
		if total > 0 {
			best = math.Max(best, float64(u)/float64(total))
		}
	}
	a.share = best / a.t.Weight
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}
