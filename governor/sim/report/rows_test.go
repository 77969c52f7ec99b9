//go:build simgrid

package report

import (
	"os"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/sim"
	"github.com/allot-sh/allot/governor/sim/fleet"
)

// stdRow is one row of the standard scenario: its generated week.
type stdRow struct {
	load float64
	seed int64
	sc   *sim.Scenario
}

// standardRows generates the standard scenario's week for every
// "load:seed" row of SIMGRID_ROWS (comma-separated; def when unset), as
// the grid does (5,000 jobs). SIMGRID_CLUSTER names another cluster file
// in ../scenarios (e.g. many.hcl) with the same workload parameters.
func standardRows(t *testing.T, def string) []stdRow {
	t.Helper()
	cluster := "standard.hcl"
	if name := os.Getenv("SIMGRID_CLUSTER"); name != "" {
		cluster = name
	}
	spec, err := fleet.Load("../scenarios/" + cluster)
	must.NoError(t, err)
	rows := os.Getenv("SIMGRID_ROWS")
	if rows == "" {
		rows = def
	}
	pairs, err := sim.ParseLoadSeeds(rows)
	must.NoError(t, err, must.Sprint("SIMGRID_ROWS"))
	out := make([]stdRow, 0, len(pairs))
	for _, p := range pairs {
		sc, err := sim.GenerateWith(spec, sim.StandardWeek(p.Seed, p.Load))
		must.NoError(t, err)
		out = append(out, stdRow{load: p.Load, seed: p.Seed, sc: sc})
	}
	return out
}
