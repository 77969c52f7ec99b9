package report

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/governor/ledger"
)

func usageCommand() *cli.Command {
	return &cli.Command{
		Name:   "usage",
		Usage:  "device-hours, run and wait time, failures and preemptions per group",
		Flags:  Flags(true),
		Action: reportAction("/allot/v1/usage", true, ledger.UsageTable),
	}
}

// titles and keys render the key columns of the cost table (the usage
// table is ledger.UsageTable).
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
