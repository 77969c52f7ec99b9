package report

import (
	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/governor/ledger"
)

func capacityCommand() *cli.Command {
	return &cli.Command{
		Name:  "capacity",
		Usage: "Allocated, Idle, Down and Reserved-waiting device-hours per pool and model, shortest first",
		Description: "Splits each pool's device time like Slurm's sreport cluster utilization:\n" +
			"Allocated + Idle + Down = capacity x time. Reserved-waiting is the demand of\n" +
			"queued jobs for the pool's model; Shortage = waiting / capacity that was up,\n" +
			"and the pools are ranked by it.",
		Flags:  Flags(false),
		Action: reportAction("/allot/v1/capacity", false, CapacityTable),
	}
}

// CapacityTable renders one row per pool and model, in the API's order.
func CapacityTable(out ledger.CapacityAnswer) ([]string, [][]string) {
	header := []string{"Pool", "Model", "Capacity h", "Allocated h", "Idle h", "Down h", "Waiting h", "Shortage", "Allocated %"}
	rows := make([][]string, 0, len(out.Pools))
	for _, p := range out.Pools {
		share := 0.0
		if p.Capacity > 0 {
			share = p.Allocated / p.Capacity
		}
		rows = append(rows, []string{p.Pool, p.Model, f2(p.Capacity / 3600), f2(p.Allocated / 3600), f2(p.Idle / 3600),
			f2(p.Down / 3600), f2(p.Waiting / 3600), f2(p.Shortage), pct(share)})
	}
	return header, rows
}
