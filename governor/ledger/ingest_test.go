package ledger

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestIngestExactlyOnce replays the same lifecycle in shuffled, repeated
// batches: every allocation ends with one row per model and the values of
// its newest state, and the watermark only moves forward.
func TestIngestExactlyOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		running := mkAlloc("a1", "ml", "train").task("t", 10, -1, false).devices("t", "H200", 2).index(5).build()
		done := mkAlloc("a1", "ml", "train").task("t", 10, 70, false).devices("t", "H200", 2).
			status("complete", "run").index(9).build()
		other := mkAlloc("a2", "cv", "eval").task("t", 20, 50, true).devices("t", "L4", 1).
			status("failed", "run").index(7).build()
		must.NoError(t, db.Ingest(ctx, segs(at(30), running, other), 7))
		must.NoError(t, db.Ingest(ctx, segs(at(80), done), 9))
		// Replays of older states, in any order, change nothing.
		rng := rand.New(rand.NewSource(1))
		for i := 0; i < 20; i++ {
			batch := []*api.AllocationListStub{running, other, done}
			rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
			must.NoError(t, db.Ingest(ctx, segs(at(90+i), batch...), uint64(rng.Intn(9))))
		}
		wm, err := db.Watermark(ctx)
		must.NoError(t, err)
		must.Eq(t, uint64(9), wm)
		rows, err := db.Usage(ctx, Query{Since: t0, Until: at(1000), By: []string{"tenant", "model"}})
		must.NoError(t, err)
		must.Len(t, 2, rows)
		must.Eq(t, map[string]string{"tenant": "cv", "model": "nvidia/gpu/L4"}, rows[0].Key)
		must.Eq(t, int64(30_000), rows[0].DeviceMS)
		must.Eq(t, int64(1), rows[0].Failures)
		must.Eq(t, int64(120_000), rows[1].DeviceMS)
		var n int
		must.NoError(t, db.SQL().QueryRow(`SELECT COUNT(*) FROM segments`).Scan(&n))
		must.Eq(t, 2, n)
	})
}

func segs(now time.Time, allocs ...*api.AllocationListStub) []Segment {
	var out []Segment
	for _, a := range allocs {
		out = append(out, Segments(a, Context{}, now)...)
	}
	return out
}

// TestAccrueAndVanish: open segments follow the clock; one whose
// allocation Nomad no longer lists is closed at its last accrual.
func TestAccrueAndVanish(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		a := mkAlloc("a1", "ml", "train").task("t", 0, -1, false).devices("t", "H200", 1).index(3).build()
		b := mkAlloc("a2", "ml", "train").task("t", 0, -1, false).devices("t", "H200", 1).index(4).build()
		must.NoError(t, db.Ingest(ctx, segs(at(10), a, b), 4))
		n, err := db.Accrue(ctx, at(60))
		must.NoError(t, err)
		must.Eq(t, int64(2), n)
		closed, err := db.CloseVanished(ctx, map[string]bool{"a1": true})
		must.NoError(t, err)
		must.Eq(t, 1, closed)
		_, err = db.Accrue(ctx, at(120))
		must.NoError(t, err)
		rows, err := db.Usage(ctx, Query{Since: t0, Until: at(1000), By: []string{"job"}})
		must.NoError(t, err)
		must.Len(t, 1, rows)
		must.Eq(t, int64(120_000+60_000), rows[0].DeviceMS)
		must.Eq(t, "ml", rows[0].Key["tenant"])
	})
}

// TestMigrationsRunOnce reopens a database: no step runs twice, and a
// schema newer than the binary is refused.
func TestMigrationsRunOnce(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/l.db"
	db, err := Open(ctx, DriverSQLite, path)
	must.NoError(t, err)
	must.NoError(t, db.Close())
	db, err = Open(ctx, DriverSQLite, path)
	must.NoError(t, err)
	var n int
	must.NoError(t, db.SQL().QueryRow(`SELECT COUNT(*) FROM ledger_migrations`).Scan(&n))
	must.Eq(t, SchemaVersion, n)
	_, err = db.SQL().Exec(`INSERT INTO ledger_migrations (version, applied_ms) VALUES (999, 0)`)
	must.NoError(t, err)
	must.NoError(t, db.Close())
	_, err = Open(ctx, DriverSQLite, path)
	must.ErrorContains(t, err, "newer than this governor")
	_, err = Open(ctx, "mysql", "x")
	must.ErrorIs(t, err, ErrDriver)
}

// TestRecorderCatchUp: the catch-up listing writes what Nomad holds and
// closes the open segments of allocations it no longer lists; a later
// listing applies only allocations changed after the watermark.
func TestRecorderCatchUp(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		gone := mkAlloc("gone", "ml", "j").task("t", 0, -1, false).devices("t", "H200", 1).index(2).build()
		must.NoError(t, db.Ingest(ctx, segs(at(30), gone), 2))
		run := mkAlloc("run", "ml", "j").task("t", 10, -1, false).devices("t", "H200", 1).index(5).build()
		nomad := &fakeNomad{allocs: []*api.AllocationListStub{run}, index: 5,
			nodes: []*api.NodeListStub{gpuNode("n1", "gpu", "H200", 4, 0)}}
		r := &Recorder{DB: db, Nomad: nomad, Now: func() time.Time { return at(60) }}
		must.NoError(t, r.CatchUp(ctx))
		rows, err := db.Usage(ctx, Query{Since: t0, Until: at(1000), By: []string{"pool"}})
		must.NoError(t, err)
		must.Len(t, 2, rows)
		must.Eq(t, "", rows[0].Key["pool"]) // gone was written before its node was known
		must.Eq(t, int64(30_000), rows[0].DeviceMS)
		must.Eq(t, "gpu", rows[1].Key["pool"])
		must.Eq(t, int64(50_000), rows[1].DeviceMS)
		fresh := mkAlloc("new", "ml", "j").task("t", 0, 5, false).index(6).build()
		must.Eq(t, []*api.AllocationListStub{fresh}, changedAfter([]*api.AllocationListStub{run, fresh}, 5))
	})
}

type fakeStats map[string]float64

func (f fakeStats) DeviceUtilization(context.Context, string) (map[string]float64, error) {
	return f, nil
}

// TestUsedBasis: utilization × Δt × devices, Δt from the start or the
// previous sample and at most one period.
func TestUsedBasis(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		a := mkAlloc("a1", "ml", "j").task("t", 0, -1, false).devices("t", "H200", 2).index(1).build()
		must.NoError(t, db.Ingest(ctx, segs(at(1), a), 1))
		var u usedSampler
		stats := fakeStats{"nvidia/gpu/H200": 0.5}
		for _, s := range []int{1, 3, 10} {
			must.NoError(t, u.sample(ctx, db, stats, at(s), 2*time.Second))
		}
		var used, sampled int64
		must.NoError(t, db.SQL().QueryRow(`SELECT used_device_ms, used_sampled_ms FROM segments`).Scan(&used, &sampled))
		must.Eq(t, int64(10_000), sampled) // 2 devices × (1 + 2 + 2) s
		must.Eq(t, int64(5_000), used)
	})
}

func TestInUse(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		open := mkAlloc("a1", "ml", "j").task("t", 0, -1, false).devices("t", "H200", 2).index(1).build()
		done := mkAlloc("a2", "ml", "j").task("t", 0, 5, false).devices("t", "H200", 1).status("complete", "run").index(2).build()
		must.NoError(t, db.Ingest(ctx, segs(at(10), open, done), 2))
		got, err := db.InUse(ctx)
		must.NoError(t, err)
		must.Eq(t, map[NodeModel]int64{{Node: "n1", Model: "nvidia/gpu/H200"}: 2}, got)
	})
}
