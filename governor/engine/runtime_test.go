package engine

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestMaxRuntimeStops: an admitted job that ran longer than its
// allot.max-runtime is stopped (the actuator deregisters it; the ckpt
// driver checkpoints on the way out) with a reason; one within its limit,
// one without a limit and a queued one are left alone.
func TestMaxRuntimeStops(t *testing.T) {
	now := t0.Add(3 * time.Hour)
	running := func(id string, limit, ran time.Duration) (*Job, *Alloc) {
		j := mkJob("t", id).State(Admitted).Device(h200, 1).Build()
		j.MaxRuntime = limit
		a := alloc("t", id, "g", "n1", 100, 128, map[string]int{h200: 1})
		a.Started, a.StartedAt = true, now.Add(-ran)
		return j, a
	}
	over, a1 := running("over", time.Hour, 2*time.Hour)
	within, a2 := running("within", 3*time.Hour, 2*time.Hour)
	nolimit, a3 := running("nolimit", 0, 2*time.Hour)
	queued := mkJob("t", "queued").QueuedAt(now).Device(h200, 1).Build()
	queued.MaxRuntime = time.Minute
	s := snap([]*Tenant{mkTenant("t").Build()}, []*Node{mkNode("n1").Devices(h200, 4).Build()},
		[]*Alloc{a1, a2, a3}, over, within, nolimit, queued)
	s.Now = now
	p := Decide(testConfig(), s)
	var stops []Decision
	for _, d := range p.Decisions {
		if d.Action == Stop {
			stops = append(stops, d)
		}
	}
	must.SliceLen(t, 1, stops)
	must.Eq(t, "over", stops[0].JobID)
	must.Eq(t, CauseMaxRuntime, stops[0].Cause)
	must.StrContains(t, stops[0].Reason, "ran 2h0m0s, longer than its allot.max-runtime 1h0m0s")
	must.Eq(t, Stopped, p.Verdicts["t/over"].State)
	must.Eq(t, Admitted, p.Verdicts["t/queued"].State, must.Sprint("the queued job is admitted: its limit counts once it runs"))
}

// TestMaxRuntimeMalformedHolds: a queued job whose allot.max-runtime
// could not be read stays queued with that reason and blocks no one.
func TestMaxRuntimeMalformedHolds(t *testing.T) {
	bad := mkJob("t", "bad").Device(h200, 1).Build()
	bad.MaxRuntimeErr = `"soon" is not a positive duration`
	good := mkJob("t", "good").QueuedAt(t0.Add(time.Second)).Device(h200, 1).Build()
	p := Decide(testConfig(), snap([]*Tenant{mkTenant("t").Build()}, []*Node{mkNode("n1").Devices(h200, 1).Build()}, nil, bad, good))
	v := p.Verdicts["t/bad"]
	must.Eq(t, Queued, v.State)
	must.StrContains(t, v.Reason, `runtime: allot.max-runtime "soon" is not a positive duration`)
	must.Eq(t, Admitted, p.Verdicts["t/good"].State)
}
