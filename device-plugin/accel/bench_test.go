package accel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// benchInventory writes an inventory of n H200s in NVLink pairs over two
// NUMA nodes.
func benchInventory(b *testing.B, n int) string {
	b.Helper()
	src := fmt.Sprintf("gpu \"H200\" {\n  count = %d\n  memory_mib = 143771\n  topology = \"nvlink\"\n  islands = [", n)
	numa := ""
	for i := 0; i < n; i += 2 {
		src += fmt.Sprintf("[%d, %d],", i, i+1)
		numa += fmt.Sprintf("%d, %d, ", 2*i/n, 2*(i+1)/n)
	}
	src += "]\n  numa_nodes = [" + numa + "]\n}\n"
	p := filepath.Join(b.TempDir(), "bench.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

func benchPlugin(b *testing.B, n int, grouping string) *accel.Plugin {
	b.Helper()
	p := accel.New(hclog.NewNullLogger(), factories())
	cfg := accel.DefaultConfig()
	cfg.InventoryFile, cfg.TopologyGrouping = benchInventory(b, n), grouping
	if err := p.SetConfigDirect(cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p
}

// BenchmarkFingerprint measures one fingerprint round as the plugin runs it
// every fingerprint_period: read and parse the inventory file, apply
// health, build the Nomad device groups.
func BenchmarkFingerprint(b *testing.B) {
	for _, n := range []int{8, 64} {
		for _, grouping := range []string{accel.GroupingNone, accel.GroupingIsland} {
			b.Run(fmt.Sprintf("inventory/%d-devices/%s", n, grouping), func(b *testing.B) {
				p := benchPlugin(b, n, grouping)
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if len(p.FingerprintOnce(ctx)) == 0 {
						b.Fatal("no groups")
					}
				}
			})
		}
	}
}

// BenchmarkStats measures one stats collection over every device.
func BenchmarkStats(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("inventory/%d-devices", n), func(b *testing.B) {
			p := benchPlugin(b, n, accel.GroupingNone)
			ctx := context.Background()
			p.FingerprintOnce(ctx)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r := p.CollectStats(ctx); r.Error != nil || len(r.Groups) == 0 {
					b.Fatal("no stats", r.Error)
				}
			}
		})
	}
}
