package engine

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestFairShareRecomputedAfterEachAdmission: two tenants with equal
// quotas and no usage; a's jobs are older. Four free GPUs go two and two
// (a, b, a, b), not three to a because its share was zero when the cycle
// began; the positions of what waits follow the same walk.
func TestFairShareRecomputedAfterEachAdmission(t *testing.T) {
	tenants := []*Tenant{mkTenant("a").Quota("gpu", 4).Build(), mkTenant("b").Quota("gpu", 4).Build()}
	var jobs []*Job
	for i, id := range []string{"a1", "a2", "a3"} {
		jobs = append(jobs, mkJob("a", id).QueuedAt(t0.Add(time.Duration(i)*time.Second)).Device(h200, 1).Build())
	}
	for i, id := range []string{"b1", "b2", "b3"} {
		jobs = append(jobs, mkJob("b", id).QueuedAt(t0.Add(time.Minute+time.Duration(i)*time.Second)).Device(h200, 1).Build())
	}
	p := Decide(testConfig(), snap(tenants, []*Node{mkNode("n1").Devices(h200, 4).Build()}, nil, jobs...))
	var admitted []string
	for _, d := range p.Decisions {
		if d.Action == Admit {
			admitted = append(admitted, d.JobID)
		}
	}
	must.Eq(t, []string{"a1", "b1", "a2", "b2"}, admitted)
	must.Eq(t, 2, len(p.Queue))
	must.Eq(t, "a3", p.Queue[0].JobID)
	must.Eq(t, "b3", p.Queue[1].JobID)
}
