package ledger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkMemoryBySize measures the governor's memory as the SQLite
// ledger grows: a fresh database ingests n finished segments (batches of
// 500, as the recorder writes them), then each iteration runs a
// per-tenant report over the whole span. After a forced GC it reports
// the Go heap (runtime.MemStats.HeapAlloc) and the process's resident set
// (VmRSS, which also holds SQLite's own page cache, allocated outside the
// Go heap by modernc.org/sqlite).
func BenchmarkMemoryBySize(b *testing.B) {
	for _, n := range []int{10_000, 200_000} {
		b.Run(fmt.Sprintf("segments=%d", n), func(b *testing.B) {
			db, err := Open(context.Background(), DriverSQLite, filepath.Join(b.TempDir(), "mem.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			const batch = 500
			for done := 0; done < n; done += batch {
				segs := make([]Segment, 0, batch)
				for i := done; i < done+batch && i < n; i++ {
					segs = append(segs, benchSegment(i))
				}
				if err := db.Ingest(ctx, segs, uint64(done+batch)); err != nil {
					b.Fatal(err)
				}
			}
			q := Query{Since: year0, Until: year0.Add(time.Duration(n)*time.Second + 2*time.Hour), By: []string{"tenant"}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rows, err := db.Usage(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				if len(rows) != 50 {
					b.Fatalf("%d tenants in the report, want 50", len(rows))
				}
			}
			b.StopTimer()
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
			if rss, ok := residentMiB(); ok {
				b.ReportMetric(rss, "rss-MiB")
			}
		})
	}
}

// residentMiB reads the process's VmRSS from /proc (Linux only).
func residentMiB() (float64, bool) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			return kb / 1024, err == nil
		}
	}
	return 0, false
}
