package engine

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestMemoisedChecksNameEachJobsClass: jobs of one tenant and shape share
// their failed checks (memoChecks) whatever their class, but each verdict
// shows its own class check in front of them.
func TestMemoisedChecksNameEachJobsClass(t *testing.T) {
	sc := &scene{tenants: []*Tenant{mkTenant("a").Quota("gpu", 8).Limit("gpu", 8).Build()},
		nodes: []*Node{gpuNode("n1", 8), gpuNode("n2", 8)}}
	sc.run("a", "r1", "high", "n1", 8, 5)
	sc.queue(gpuJob("a", "h1", "high", 4)).queue(gpuJob("a", "l1", "low", 4)).queue(gpuJob("a", "h2", "high", 4))
	p := Decide(testConfig(), sc.snap())
	for id, class := range map[string]string{"h1": "class high", "l1": "class low", "h2": "class high"} {
		v := p.Verdicts["a/"+id]
		must.SliceLen(t, 2, v.Checks, must.Sprint(id))
		must.StrHasPrefix(t, class, v.Checks[0].Detail, must.Sprint(id))
		must.Eq(t, "limit", v.Checks[1].Name, must.Sprint(id))
		must.StrHasPrefix(t, "limit:", v.Reason, must.Sprint(id))
	}
}
