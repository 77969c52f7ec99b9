package report

import (
	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/governor/ledger"
)

func costCommand() *cli.Command {
	return &cli.Command{
		Name:  "cost",
		Usage: "cost per group on the allocated and used bases, with idle capacity as its own lines",
		Description: "Prices the ledger with the governor's rates (config: ledger { device_rates ... }).\n" +
			"Allocated is what was reserved; Used prices devices by utilization x time where\n" +
			"device stats exist (Coverage shows how much of the time they covered). Idle\n" +
			"capacity is listed on its own lines; with idle_policy = \"share\" the Idle share\n" +
			"column shows each group's part of it.",
		Flags:  Flags(true),
		Action: reportAction("/allot/v1/cost", true, CostTable),
	}
}

// CostTable renders cost rows, then one row per idle pool and model, then
// the total.
func CostTable(out ledger.CostAnswer) ([]string, [][]string) {
	by := ledger.UsageKeyColumns(out.By)
	header := append(titles(by), "Device-h", "Allocated", "Used", "Coverage", "Idle share", "Currency")
	var rows [][]string
	for _, r := range out.Rows {
		rows = append(rows, append(keys(r.Key, by), f2(r.Devices), f2(r.Allocated), f2(r.Used),
			pct(r.UsedCoverage), f2(r.IdleShare), out.Currency))
	}
	for _, r := range out.Idle {
		line := make([]string, len(by))
		for i := range line {
			line[i] = "-"
		}
		line[0] = "(idle) " + r.Key["idle"]
		rows = append(rows, append(line, f2(r.Devices), f2(r.Allocated), "-", "-", "-", out.Currency))
	}
	total := make([]string, len(by))
	for i := range total {
		total[i] = ""
	}
	total[0] = "TOTAL"
	rows = append(rows, append(total, "", f2(out.Total), "", "", "", out.Currency))
	return header, rows
}

func pct(x float64) string { return f2(100*x) + "%" }
