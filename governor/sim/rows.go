package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// LoadSeed is one week of a measurement grid: the offered load and the
// seed of its workload and placement model.
type LoadSeed struct {
	Load float64
	Seed int64
}

// ParseLoadSeeds reads comma-separated "load:seed" pairs ("1.2:2,1.5:3"),
// as the simgrid measurements take them from SIMGRID_ROWS. A load is a
// finite number above zero, a seed an integer.
func ParseLoadSeeds(s string) ([]LoadSeed, error) {
	var out []LoadSeed
	for _, row := range strings.Split(s, ",") {
		ls, ss, ok := strings.Cut(strings.TrimSpace(row), ":")
		if !ok {
			return nil, fmt.Errorf("row %q: want load:seed", row)
		}
		load, err := strconv.ParseFloat(ls, 64)
		if err != nil || load <= 0 || math.IsInf(load, 0) || math.IsNaN(load) {
			return nil, fmt.Errorf("row %q: load %q is not a number above zero", row, ls)
		}
		seed, err := strconv.ParseInt(ss, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("row %q: seed %q is not an integer: %w", row, ss, err)
		}
		out = append(out, LoadSeed{Load: load, Seed: seed})
	}
	return out, nil
}
