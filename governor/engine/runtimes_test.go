package engine

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestConfigRuntimesLearned: without allot.max-runtime or Estimate, the
// run times Config.Runtimes learned give the reservation its start and
// let a short job backfill before it; a job's own limit wins over the
// learned value, and what it does not know stays unknown.
func TestConfigRuntimesLearned(t *testing.T) {
	now := t0.Add(time.Hour)
	run := func(id, node string, gpus int, age time.Duration) (*Job, *Alloc) {
		j := mkJob("t", id).State(Admitted).CPU(500).Mem(512).Device(h200, gpus).Build()
		a := alloc("t", id, "g", node, 500, 512, map[string]int{h200: gpus})
		a.Started, a.StartedAt = true, now.Add(-age)
		return j, a
	}
	j1, a1 := run("r1", "n1", 6, time.Hour)
	j2, a2 := run("r2", "n2", 7, time.Hour)
	head := mkJob("t", "head").QueuedAt(now.Add(-time.Hour)).Device(h200, 8).Build()
	short := mkJob("t", "short").QueuedAt(now.Add(-time.Minute)).Device(h200, 2).Build()
	limited := mkJob("t", "limited").QueuedAt(now.Add(-time.Minute)).Device(h200, 2).Build()
	limited.MaxRuntime = 5 * time.Hour // its own limit wins over the learned 30m
	unknown := mkJob("t", "unknown").QueuedAt(now.Add(-time.Minute)).Device(h200, 2).Build()
	learned := map[string]time.Duration{"r1": 2 * time.Hour, "r2": 3 * time.Hour, "short": 30 * time.Minute, "limited": 30 * time.Minute}
	cfg := testConfig()
	cfg.Runtimes = func(j *Job) time.Duration { return learned[j.ID] }
	s := snap([]*Tenant{mkTenant("t").Build()},
		[]*Node{mkNode("n1").Devices(h200, 8).Build(), mkNode("n2").Devices(h200, 8).Build()},
		[]*Alloc{a1, a2}, j1, j2, head, short, limited, unknown)
	s.Now = now
	p := Decide(cfg, s)
	must.Eq(t, []Reservation{{Job: "t/head", Pool: "default", Start: now.Add(time.Hour), Nodes: []string{"n1"}}}, p.Reservations)
	must.StrContains(t, p.Verdicts["t/short"].Reason, "admitted")
	must.StrContains(t, p.Verdicts["t/limited"].Reason, "may run 5h0m0s, past that")
	must.StrContains(t, p.Verdicts["t/unknown"].Reason, "no runtime estimate")
	must.Eq(t, 30*time.Minute, cfg.RuntimeOf(short))
	must.Eq(t, 5*time.Hour, cfg.RuntimeOf(limited))
	must.Zero(t, cfg.RuntimeOf(unknown))

	// Without the learned run times the start is unknown and nothing
	// that fits only on the reserved node backfills.
	p = Decide(testConfig(), s)
	must.Eq(t, []Reservation{{Job: "t/head", Pool: "default", Nodes: []string{"n1"}}}, p.Reservations)
	must.StrContains(t, p.Verdicts["t/short"].Reason, "its start is unknown")
}
