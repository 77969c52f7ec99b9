package console

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/idle"
	"github.com/allot-sh/allot/governor/ledger"
)

// TestUsageHeaderMatchesTable: the usage page's header, in English, is
// the columns of the CSV export and of `allotctl report usage`
// (ledger.UsageTable).
func TestUsageHeaderMatchesTable(t *testing.T) {
	for _, by := range [][]string{{"tenant"}, {"model"}, {"job"}, {"tenant", "job"}, {"pool", "model"}, {"job", "class"}} {
		h, _ := ledger.UsageTable(ledger.UsageAnswer{By: by})
		must.Eq(t, h, usageHeader(Lang{Code: LangEN}, by))
	}
}

// TestRuntimeKeysInCatalogue: the labels the report views build at run
// time (windows, groupings, audit kinds, idle ladder steps) exist.
func TestRuntimeKeysInCatalogue(t *testing.T) {
	var keys []string
	for _, w := range reportWindows {
		keys = append(keys, "window."+w.Code)
	}
	for _, g := range usageGroupings {
		keys = append(keys, "by."+g)
	}
	for _, g := range []string{"tenant", "model", "pool", "job", "class", "node"} { // every -by of the ledger
		keys = append(keys, groupColumn(g))
	}
	keys = append(keys, usageColumns...)
	for _, k := range auditKinds {
		keys = append(keys, "audit.kind."+auditKindKey(k))
	}
	for _, s := range []idle.Step{idle.StepObserve, idle.StepSuspect, idle.StepWarned, idle.StepReclaim, idle.StepReclaimed, idle.StepExempt} {
		keys = append(keys, "step."+string(s))
	}
	keys = append(keys, "usage.title", "idle.title", "capacity.title", "audit.title")
	for _, k := range keys {
		_, ok := catalogue[k]
		must.True(t, ok, must.Sprintf("label %q is not in the catalogue", k))
	}
}

// TestMetaWith: the namespace writes (quota form, idle exemption) set
// their keys on a copy of the meta read, never on the read map itself.
func TestMetaWith(t *testing.T) {
	cur := map[string]string{"allot.quota.gpu": "8", "owner": "ml"}
	got := metaWith(cur, map[string]string{"allot.quota.gpu": "16", "allot.idle.exempt.x": "v"})
	must.Eq(t, map[string]string{"allot.quota.gpu": "16", "owner": "ml", "allot.idle.exempt.x": "v"}, got)
	must.Eq(t, map[string]string{"allot.quota.gpu": "8", "owner": "ml"}, cur)
	must.Eq(t, map[string]string{"k": "v"}, metaWith(nil, map[string]string{"k": "v"}))
}
