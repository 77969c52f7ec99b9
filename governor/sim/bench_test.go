package sim

import (
	"fmt"
	"testing"

	"github.com/allot-sh/allot/governor/sim/fleet"
)

// BenchmarkWeek simulates a week on the standard cluster scaled to nodes
// with jobs generated jobs; one op is one whole run.
func BenchmarkWeek(b *testing.B) {
	for _, size := range []struct{ nodes, jobs int }{{64, 5000}, {1000, 20000}} {
		spec, err := fleet.Load("scenarios/standard.hcl")
		if err != nil {
			b.Fatal(err)
		}
		spec.Scale(size.nodes)
		sc, err := Generate(spec, 1, size.jobs, Week, 0.9)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range Policies() {
			b.Run(fmt.Sprintf("nodes=%d/jobs=%d/%s", size.nodes, size.jobs, p), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					r, err := Run(spec, sc.Jobs, p, DefaultOptions())
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(r.End.Hours()*3600/b.Elapsed().Seconds()*float64(i+1)/float64(b.N), "simsec/s")
				}
			})
		}
	}
}
