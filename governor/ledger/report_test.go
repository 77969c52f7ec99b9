package ledger

import (
	"context"
	"math"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
)

func TestUsageSumsAndWindow(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		allocs := []*api.AllocationListStub{
			mkAlloc("a1", "ml", "j1").task("t", 0, 100, false).devices("t", "H200", 2).status("complete", "run").build(),
			mkAlloc("a2", "ml", "j2").task("t", 50, 250, false).devices("t", "H200", 1).status("complete", "stop").build(),
			mkAlloc("a3", "cv", "j3").task("t", 0, 300, false).devices("t", "L4", 4).status("failed", "run").build(),
			mkAlloc("a4", "cv", "j4").task("t", 10, 20, false).status("complete", "run").build(),
		}
		must.NoError(t, db.Ingest(ctx, segs(at(400), allocs...), 10))
		byTenant, err := db.Usage(ctx, Query{Since: t0, Until: at(400)})
		must.NoError(t, err)
		byJob, err := db.Usage(ctx, Query{Since: t0, Until: at(400), By: []string{"tenant", "job", "model"}})
		must.NoError(t, err)
		must.Len(t, 2, byTenant)
		for _, tenant := range byTenant {
			var sum int64
			for _, r := range byJob {
				if r.Key["tenant"] == tenant.Key["tenant"] {
					sum += r.DeviceMS
				}
			}
			must.Eq(t, tenant.DeviceMS, sum)
		}
		must.Eq(t, int64(1_200_000), byTenant[0].DeviceMS) // cv: 4 × 300 s
		must.Eq(t, int64(400_000), byTenant[1].DeviceMS)   // ml: 2×100 + 200
		// A window clips: [50, 150) sees 2×50 of a1, 100 of a2, 4×100 of a3.
		clipped, err := db.Usage(ctx, Query{Since: at(50), Until: at(150), By: []string{"model"}})
		must.NoError(t, err)
		must.Eq(t, int64(600_000), sumDeviceMS(clipped))
		only, err := db.Usage(ctx, Query{Since: t0, Until: at(400), Namespaces: []string{"ml"}})
		must.NoError(t, err)
		must.Len(t, 1, only)
		none, err := db.Usage(ctx, Query{Since: t0, Until: at(400), Namespaces: []string{}})
		must.NoError(t, err)
		must.Len(t, 0, none)
		_, err = db.Usage(ctx, Query{Since: t0, Until: at(400), By: []string{"color"}})
		must.ErrorIs(t, err, ErrBadQuery)
	})
}

// TestCapacitySplitAndRanking: Allocated + Idle + Down = capacity × time,
// and the pool whose waiting demand is largest against what is up ranks
// first.
func TestCapacitySplitAndRanking(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		nodes := []*api.NodeListStub{gpuNode("n1", "big", "H200", 4, 1), gpuNode("n2", "small", "L4", 2, 0)}
		waiting := map[PoolModel]int64{{Pool: "small", Model: "nvidia/gpu/L4"}: 4}
		for s := 0; s <= 100; s += 10 {
			must.NoError(t, db.SampleCapacity(ctx, Inventory(nodes, waiting), at(s)))
		}
		var n int
		must.NoError(t, db.SQL().QueryRow(`SELECT COUNT(*) FROM capacity_samples`).Scan(&n))
		must.Eq(t, 2, n) // unchanged stock extends one row per pool and model
		a := mkAlloc("a1", "ml", "j").task("t", 0, 100, false).devices("t", "H200", 2).status("complete", "run").build()
		a.NodeID = "n1"
		segments := Segments(a, Context{NodePool: func(string) string { return "big" }}, at(100))
		must.NoError(t, db.Ingest(ctx, segments, 1))
		rows, err := db.Capacity(ctx, t0, at(100))
		must.NoError(t, err)
		must.Len(t, 2, rows)
		must.Eq(t, "small", rows[0].Pool)
		must.Eq(t, 2.0, rows[0].Shortage)
		big := rows[1]
		must.Eq(t, 400.0, big.Capacity)
		must.Eq(t, 200.0, big.Allocated)
		must.Eq(t, 100.0, big.Down)
		must.Eq(t, 100.0, big.Idle)
		must.True(t, math.Abs(big.Allocated+big.Idle+big.Down-big.Capacity) < 1e-9)
		// A node drains: its free devices count as down from then on, the
		// one in use stays allocated.
		nodes[0].Drain = true
		inUse := map[NodeModel]int64{{Node: "n1", Model: "nvidia/gpu/H200"}: 1}
		must.NoError(t, db.SampleCapacity(ctx, InventoryInUse(nodes, waiting, inUse), at(150)))
		must.NoError(t, db.SampleCapacity(ctx, InventoryInUse(nodes, waiting, inUse), at(200)))
		rows, err = db.Capacity(ctx, at(100), at(200))
		must.NoError(t, err)
		must.Eq(t, "big", rows[1].Pool)
		must.Eq(t, 50.0+150.0, rows[1].Down) // 1 of 4 until 150, then 3 of 4
	})
}

func TestCostBases(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		must.NoError(t, db.SampleCapacity(ctx, Inventory([]*api.NodeListStub{gpuNode("n1", "gpu", "H200", 2, 0)}, nil), t0))
		must.NoError(t, db.SampleCapacity(ctx, Inventory([]*api.NodeListStub{gpuNode("n1", "gpu", "H200", 2, 0)}, nil), at(3600)))
		a := mkAlloc("a1", "ml", "j").task("t", 0, 3600, false).devices("t", "H200", 1).status("complete", "run").build()
		must.NoError(t, db.Ingest(ctx, Segments(a, Context{NodePool: func(string) string { return "gpu" }}, at(3600)), 1))
		rates := Rates{Currency: "EUR", Devices: map[string]float64{"nvidia/gpu/H200": 4}, CPUGHzHour: 0.5, MemGiBHour: 0.25,
			IdlePolicy: IdleShare}
		rep, err := db.Cost(ctx, Query{Since: t0, Until: at(3600)}, rates)
		must.NoError(t, err)
		must.Len(t, 1, rep.Rows)
		// 1 H200-hour × 4 + 1 GHz-hour × 0.5 + 1 GiB-hour × 0.25
		must.Eq(t, 4.75, rep.Rows[0].Allocated)
		must.Eq(t, 0.75, rep.Rows[0].Used) // no device stats: devices unpriced on the used basis
		must.Eq(t, 0.0, rep.Rows[0].UsedCoverage)
		must.Len(t, 1, rep.Idle)
		must.Eq(t, 4.0, rep.Idle[0].Allocated) // the second H200 sat idle for an hour
		must.Eq(t, 4.0, rep.Rows[0].IdleShare)
		must.Eq(t, 8.75, rep.Total)
	})
}

func TestWaitingFromQueue(t *testing.T) {
	jobs := map[string]*engine.Job{
		"ml/a": {NodePool: "infer", Groups: []engine.Group{{Count: 2, Devices: []engine.DeviceRequest{{Name: "nvidia/gpu/L4", Count: 2}}}}},
		"ml/b": {Groups: []engine.Group{{Count: 1, Devices: []engine.DeviceRequest{{Name: "nvidia/gpu", Count: 8}}}}},
	}
	fit := []engine.Check{{Name: "limit", OK: true}, {Name: "fit"}}
	plan := &engine.Plan{Queue: []engine.Verdict{{Namespace: "ml", JobID: "a", Checks: fit},
		{Namespace: "ml", JobID: "b", Checks: fit}, {Namespace: "ml", JobID: "gone", Checks: fit},
		{Namespace: "ml", JobID: "a", Checks: []engine.Check{{Name: "limit"}, {Name: "fit"}}},
		{Namespace: "ml", JobID: "a", Checks: []engine.Check{{Name: "fit", Permanent: true}}}}}
	got := Waiting(plan, func(ns, id string) (*engine.Job, bool) { j, ok := jobs[ns+"/"+id]; return j, ok })
	must.Eq(t, map[PoolModel]int64{{Pool: "infer", Model: "nvidia/gpu/L4"}: 4}, got)
	must.Eq(t, map[PoolModel]int64{}, Waiting(nil, nil))
}

func TestBlockedDemand(t *testing.T) {
	j := &engine.Job{NodePool: "infer", Groups: []engine.Group{{Name: "g", Count: 3,
		Devices: []engine.DeviceRequest{{Name: "nvidia/gpu/L4", Count: 2}}}}}
	evals := []*api.Evaluation{{Namespace: "ml", JobID: "a", FailedTGAllocs: map[string]*api.AllocationMetric{"g": {CoalescedFailures: 1}}},
		{Namespace: "ml", JobID: "unknown"}}
	got := Blocked(evals, func(ns, id string) (*engine.Job, bool) { return j, id == "a" })
	must.Eq(t, map[PoolModel]int64{{Pool: "infer", Model: "nvidia/gpu/L4"}: 4}, got)
}
