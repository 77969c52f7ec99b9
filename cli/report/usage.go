package report

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/governor/ledger"
)

func usageCommand() *cli.Command {
	return &cli.Command{
		Name:   "usage",
		Usage:  "device-hours, run and wait time, failures and preemptions per group",
		Flags:  Flags(true),
		Action: reportAction("/allot/v1/usage", true, UsageTable),
	}
}

// UsageTable renders usage rows: the -by columns, then the numbers.
func UsageTable(out ledger.UsageAnswer) ([]string, [][]string) {
	by := keyColumns(out.By)
	header := append(titles(by), "Allocs", "Device-h", "Used device-h", "Run h", "Wait h", "Failed", "Preempted",
		"Restarts", "Lost work h")
	rows := make([][]string, 0, len(out.Rows))
	for _, u := range out.Rows {
		r := keys(u.Key, by)
		r = append(r, fmt.Sprint(u.Allocations), hours(u.DeviceMS), usedHours(u), hours(u.RunMS), hours(u.WaitMS),
			fmt.Sprint(u.Failures), fmt.Sprint(u.Preemptions), fmt.Sprint(u.Restarts), hours(u.LostWorkMS))
		rows = append(rows, r)
	}
	return header, rows
}

// usedHours is "-" where no device stats covered the group.
func usedHours(u ledger.Usage) string {
	if u.UsedSampledMS == 0 {
		return "-"
	}
	return hours(u.UsedDeviceMS)
}

// keyColumns is by, with tenant added where job needs it.
func keyColumns(by []string) []string {
	out := append([]string(nil), by...)
	for _, b := range by {
		if b == "job" && !contains(by, "tenant") {
			out = append([]string{"tenant"}, out...)
		}
	}
	return out
}

func titles(by []string) []string {
	out := make([]string, len(by))
	for i, b := range by {
		out[i] = strings.ToUpper(b[:1]) + b[1:]
	}
	return out
}

func keys(k map[string]string, by []string) []string {
	out := make([]string, len(by))
	for i, b := range by {
		out[i] = k[b]
		if out[i] == "" {
			out[i] = "-"
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
