//go:build simgrid

package report

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/sim"
	"github.com/allot-sh/allot/governor/sim/fleet"
	"github.com/allot-sh/allot/governor/sim/workload"
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
	var out []stdRow
	for _, row := range strings.Split(rows, ",") {
		ls, ss, _ := strings.Cut(row, ":")
		load, err := strconv.ParseFloat(ls, 64)
		must.NoError(t, err, must.Sprintf("SIMGRID_ROWS row %q: want load:seed", row))
		seed, err := strconv.ParseInt(ss, 10, 64)
		must.NoError(t, err, must.Sprintf("SIMGRID_ROWS row %q: want load:seed", row))
		sc, err := sim.GenerateWith(spec, workload.Params{Seed: seed, Jobs: 5000, Span: sim.Week, Load: load})
		must.NoError(t, err)
		out = append(out, stdRow{load: load, seed: seed, sc: sc})
	}
	return out
}
