package ledger

import (
	"fmt"
	"strings"
)

// UsageKeyColumns is the key columns of a usage table grouped by by: by,
// with tenant in front where job is grouped without it (a job ID names a
// job only within its namespace).
func UsageKeyColumns(by []string) []string {
	out := append([]string(nil), by...)
	if contains(by, "job") && !contains(by, "tenant") {
		out = append([]string{"tenant"}, out...)
	}
	return out
}

// UsageTable renders usage rows as `allotctl report usage` prints them and
// the console's usage view and CSV export show them: the key columns
// (UsageKeyColumns, titled, "-" for an empty key), then the numbers, hours
// with three decimals ("-" for used device-hours no device stats covered).
func UsageTable(out UsageAnswer) ([]string, [][]string) {
	by := UsageKeyColumns(out.By)
	header := make([]string, 0, len(by)+9)
	for _, b := range by {
		header = append(header, strings.ToUpper(b[:1])+b[1:])
	}
	header = append(header, "Allocs", "Device-h", "Used device-h", "Run h", "Wait h", "Failed", "Preempted",
		"Restarts", "Lost work h")
	rows := make([][]string, 0, len(out.Rows))
	for _, u := range out.Rows {
		r := make([]string, 0, len(header))
		for _, b := range by {
			k := u.Key[b]
			if k == "" {
				k = "-"
			}
			r = append(r, k)
		}
		used := "-"
		if u.UsedSampledMS != 0 {
			used = hours(u.UsedDeviceMS)
		}
		r = append(r, fmt.Sprint(u.Allocations), hours(u.DeviceMS), used, hours(u.RunMS), hours(u.WaitMS),
			fmt.Sprint(u.Failures), fmt.Sprint(u.Preemptions), fmt.Sprint(u.Restarts), hours(u.LostWorkMS))
		rows = append(rows, r)
	}
	return header, rows
}

// hours writes milliseconds as hours with three decimals.
func hours(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/3.6e6) }
