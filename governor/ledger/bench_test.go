package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// benchSegments is the size of the report benchmark's ledger: a year of
// a 1,000-GPU cluster at roughly 2,700 allocations a day.
const benchSegments = 1_000_000

// year0 is the first day of the benchmark's year.
var year0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// benchBackend opens a fresh database per backend for b.
func benchBackend(b *testing.B, name string) *DB {
	switch name {
	case DriverSQLite:
		db, err := Open(context.Background(), DriverSQLite, filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	default:
		if pg == nil {
			b.Skipf("PostgreSQL HALF NOT RUN: %v", pgMissing)
		}
		db, err := Open(context.Background(), DriverPostgres, pg.NewDB(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}
}

// BenchmarkIngest measures Ingest in batches of 500 finished allocations
// (one transaction each, with the watermark): segments/s.
func BenchmarkIngest(b *testing.B) {
	for _, backend := range []string{DriverSQLite, DriverPostgres} {
		b.Run(backend, func(b *testing.B) {
			db := benchBackend(b, backend)
			ctx := context.Background()
			const batch = 500
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				segs := make([]Segment, 0, batch)
				for i := done; i < done+batch && i < b.N; i++ {
					segs = append(segs, benchSegment(i))
				}
				if err := db.Ingest(ctx, segs, uint64(done+batch)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "segments/s")
		})
	}
}

func benchSegment(i int) Segment {
	a := &api.AllocationListStub{ID: fmt.Sprintf("alloc-%09d", i), Namespace: fmt.Sprintf("tenant-%02d", i%50),
		JobID: fmt.Sprintf("job-%05d", i%5000), NodeID: "n", ClientStatus: "complete", DesiredStatus: "run",
		ModifyIndex: uint64(i + 1), TaskStates: map[string]*api.TaskState{"t": {State: "dead",
			StartedAt: year0.Add(time.Duration(i) * time.Second), FinishedAt: year0.Add(time.Duration(i)*time.Second + time.Hour)}},
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": {
			Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H200", DeviceIDs: []string{"0", "1"}}}}}}}
	return Segments(a, Context{}, year0)[0]
}

// fillSQL (Y0: the year's start in ms) generates n segments over the year in SQL: 50 tenants, 5,000
// jobs, 4 pools, 2 models, 1–8 devices, 10 minutes to 10 hours each.
const fillSQL = `INSERT INTO segments (alloc_id, model, namespace, job_id, job_version, task_group, class, node_pool,
	node_id, node_name, devices, cpu_mhz, memory_mb, queued_ms, start_ms, end_ms, open, outcome, preempted_by,
	restarts, lost_work_ms, used_device_ms, used_sampled_ms, modify_index)
	SELECT 'a' || i, CASE WHEN i % 3 = 0 THEN 'nvidia/gpu/L4' ELSE 'nvidia/gpu/H200' END,
	'tenant-' || (i % 50), 'job-' || (i % 5000), 0, 'g', 'standard', 'pool-' || (i % 4), 'n' || (i % 125),
	'node-' || (i % 125), 1 + (i % 8), 1000, 4096, Y0 + CAST(i AS BIGINT) * 31536, Y0 + CAST(i AS BIGINT) * 31536,
	Y0 + CAST(i AS BIGINT) * 31536 + 600000 + (CAST(i AS BIGINT) * 7919) % 35400000, 0, 'complete', '', 0, 0, 0, 0, i FROM `

var (
	fillOnce sync.Map // backend → *DB
	shared   struct {
		once sync.Once
		dir  string
		err  error
	}
)

// sharedDir is a directory for the process's lifetime (removed by
// TestMain).
func sharedDir(b *testing.B) string {
	shared.once.Do(func() { shared.dir, shared.err = os.MkdirTemp("", "allot-ledger-bench-") })
	if shared.err != nil {
		b.Fatal(shared.err)
	}
	return shared.dir
}

// reportDB returns a database holding benchSegments segments, built once
// per backend and process.
func reportDB(b *testing.B, backend string) *DB {
	if v, ok := fillOnce.Load(backend); ok {
		return v.(*DB)
	}
	db := benchBackendShared(b, backend)
	from := `(WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d) SELECT i FROM n) AS s`
	if backend == DriverPostgres {
		from = `generate_series(0, %d) AS s(i)`
	}
	q := strings.ReplaceAll(fillSQL, "Y0", strconv.FormatInt(year0.UnixMilli(), 10)) + fmt.Sprintf(from, benchSegments-1)
	start := time.Now()
	if _, err := db.SQL().Exec(q); err != nil {
		b.Fatal(err)
	}
	// PostgreSQL's autovacuum would analyze the table; the governor never
	// runs ANALYZE on SQLite, whose planner then keeps the start_ms range.
	if backend == DriverPostgres {
		if _, err := db.SQL().Exec(`ANALYZE segments`); err != nil {
			b.Fatal(err)
		}
	}
	err := db.tx(context.Background(), func(tx *sql.Tx) error {
		var longest int64
		if err := tx.QueryRow(`SELECT MAX(end_ms - start_ms) FROM segments`).Scan(&longest); err != nil {
			return err
		}
		return db.raiseLongest(context.Background(), tx, longest)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %d segments generated in %s", backend, benchSegments, time.Since(start).Round(time.Millisecond))
	fillOnce.Store(backend, db)
	return db
}

// benchBackendShared opens a database that lives until the process ends
// (the benchmark function runs several times with growing b.N).
func benchBackendShared(b *testing.B, backend string) *DB {
	ctx := context.Background()
	if backend == DriverSQLite {
		db, err := Open(ctx, DriverSQLite, filepath.Join(sharedDir(b), "report.db"))
		if err != nil {
			b.Fatal(err)
		}
		return db
	}
	if pg == nil {
		b.Skipf("PostgreSQL HALF NOT RUN: %v", pgMissing)
	}
	dsn, err := pg.CreateDB(fmt.Sprintf("report_%d", time.Now().UnixNano()))
	if err != nil {
		b.Fatal(err)
	}
	db, err := Open(ctx, DriverPostgres, dsn)
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkMonthlyReport measures a month's usage report over a year's
// ledger: for one tenant (by job and model) and for all tenants (by
// tenant and model).
func BenchmarkMonthlyReport(b *testing.B) {
	june := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, backend := range []string{DriverSQLite, DriverPostgres} {
		for name, q := range map[string]Query{
			"one-tenant":  {Since: june, Until: june.AddDate(0, 1, 0), By: []string{"job", "model"}, Namespaces: []string{"tenant-7"}},
			"all-tenants": {Since: june, Until: june.AddDate(0, 1, 0), By: []string{"tenant", "model"}},
		} {
			b.Run(backend+"/"+name, func(b *testing.B) {
				db := reportDB(b, backend)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					rows, err := db.Usage(context.Background(), q)
					if err != nil || len(rows) == 0 {
						b.Fatalf("report: %d rows, %v", len(rows), err)
					}
				}
			})
		}
	}
}

// BenchmarkCompletedRuns measures the governor's poll for completed runs
// (governor/estimate's learner) over a year's ledger: steady, the
// once-a-minute poll with nothing completed since the last one (an empty
// answer); first-poll-30d, the start-up poll 30 days back, which in this
// ledger (5,000 job versions of 200 segments each, spread over the year)
// finds every version and so groups every segment.
func BenchmarkCompletedRuns(b *testing.B) {
	for _, backend := range []string{DriverSQLite, DriverPostgres} {
		for name, since := range map[string]time.Time{
			"steady":         year0.AddDate(2, 0, 0),
			"first-poll-30d": year0.AddDate(1, 0, -30),
		} {
			b.Run(backend+"/"+name, func(b *testing.B) {
				db := reportDB(b, backend)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := db.CompletedRuns(context.Background(), since, 1000); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
