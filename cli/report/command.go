// Package report implements `allotctl report usage|cost|capacity`: the
// ledger's reports from the governor's /allot/v1 API over a window
// (-since/-until), grouped with -by, as a table, -json or -csv.
package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/ledger"
)

// Flag names of the report commands.
const (
	FlagSince = "since"
	FlagUntil = "until"
	FlagBy    = "by"
	FlagCSV   = "csv"
)

// Command returns `report`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "usage, cost and capacity reports from the governor's ledger",
		Description: "Reports over a window (-since/-until: RFC 3339, a date, or a duration back from now\n" +
			"such as 24h or 720h; default the last 30 days), grouped with -by (tenant, model,\n" +
			"pool, job, class, node). Only namespaces your token may read are shown.\n" +
			"  allotctl report usage -since 720h -by tenant,model\n" +
			"  allotctl report cost -since 2026-11-01 -until 2026-12-01 -csv\n" +
			"  allotctl report capacity -since 24h",
		Subcommands: []*cli.Command{usageCommand(), costCommand(), capacityCommand()},
	}
}

// Flags are the shared flags of report and audit commands.
func Flags(by bool) []cli.Flag {
	fs := append(cmdutil.ReadFlags(),
		&cli.StringFlag{Name: FlagSince, Usage: "start of the window: RFC 3339, YYYY-MM-DD or a duration back from now (720h)"},
		&cli.StringFlag{Name: FlagUntil, Usage: "end of the window (default now)"},
		&cli.BoolFlag{Name: FlagCSV, Usage: "print CSV instead of a table"})
	if by {
		fs = append(fs, &cli.StringFlag{Name: FlagBy, Value: "tenant", Usage: "group by: tenant,model,pool,job,class,node"})
	}
	return fs
}

// Window reads -since and -until into API parameters.
func Window(c *cli.Context, now time.Time) (url.Values, error) {
	v := url.Values{}
	for _, name := range []string{FlagSince, FlagUntil} {
		s := c.String(name)
		if s == "" {
			continue
		}
		t, err := ParseTime(s, now)
		if err != nil {
			return nil, cmdutil.UsageError(c, "-%s: %v", name, err)
		}
		v.Set(name, t.UTC().Format(time.RFC3339))
	}
	return v, nil
}

// ParseTime reads RFC 3339, YYYY-MM-DD (UTC) or a duration back from now.
func ParseTime(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			d = -d
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339, YYYY-MM-DD nor a duration (24h)", s)
}

// Get fetches path?params from the governor into out.
func Get(c *cli.Context, path string, params url.Values, out any) error {
	g := cmdutil.Governor(c)
	ctx, cancel := context.WithTimeout(c.Context, 60*time.Second)
	defer cancel()
	u := g.Address + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("building request: %w", err)
	}
	if g.Token != "" {
		req.Header.Set("X-Nomad-Token", g.Token)
	}
	resp, err := g.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("reading %s from the governor at %s: %w", path, g.Address, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s from the governor at %s: %d %s", path, g.Address, resp.StatusCode, allotapi.ErrorText(body))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}

// Output writes rows as -json (v), -csv or a table.
func Output(c *cli.Context, v any, header []string, rows [][]string) error {
	switch {
	case c.Bool(cmdutil.FlagJSON):
		return cmdutil.JSON(c.App.Writer, v)
	case c.Bool(FlagCSV):
		return ledger.WriteCSV(c.App.Writer, header, rows)
	default:
		return cmdutil.Table(c.App.Writer, header, rows)
	}
}

// noArgs refuses positional arguments.
func noArgs(c *cli.Context) error {
	args, err := cmdutil.Args(c)
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return cmdutil.UsageError(c, "%s takes no arguments, got %q", c.Command.Name, args)
	}
	return nil
}

func f2(x float64) string { return fmt.Sprintf("%.2f", x) }

// reportAction is the action of one report: the time window (and the
// -by grouping when grouped), one GET of path, rendered by table.
func reportAction[T any](path string, grouped bool, table func(T) ([]string, [][]string)) cli.ActionFunc {
	return func(c *cli.Context) error {
		if err := noArgs(c); err != nil {
			return err
		}
		v, err := Window(c, time.Now())
		if err != nil {
			return err
		}
		if grouped {
			v.Set(FlagBy, c.String(FlagBy))
		}
		var out T
		if err := Get(c, path, v, &out); err != nil {
			return err
		}
		header, rows := table(out)
		return Output(c, out, header, rows)
	}
}
