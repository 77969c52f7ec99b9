// Package tenant implements `allotctl tenant list|status`: every governed
// namespace with its quota, limit, usage, borrowing and quota errors.
package tenant

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	gq "github.com/allot-sh/allot/governor/quota"
)

// Command returns the `tenant` noun.
func Command() *cli.Command {
	flags := append(cmdutil.ReadFlags(), cmdutil.ConfigFlag())
	return &cli.Command{
		Name:  "tenant",
		Usage: "show tenants (governed namespaces)",
		Subcommands: []*cli.Command{{
			Name:        "list",
			Usage:       "list tenants with quota, limit, usage, borrowing and errors",
			Description: "  allotctl tenant list\n  allotctl tenant list -json",
			Flags:       flags,
			Action:      listAction,
		}, {
			Name:         "status",
			BashComplete: cmdutil.CompleteNamespaces,
			Usage:        "show one tenant in detail",
			ArgsUsage:    "<namespace>",
			Description:  "  allotctl tenant status ml-research",
			Flags:        flags,
			Action:       statusAction,
		}},
	}
}

func collect(c *cli.Context) (*View, error) {
	nc, err := cmdutil.Nomad(c)
	if err != nil {
		return nil, err
	}
	classes, err := cmdutil.Classes(c)
	if err != nil {
		return nil, err
	}
	view, err := Collect(c.Context, nc, cmdutil.Governor(c), classes)
	if err != nil {
		return nil, err
	}
	if view.GovernorError != "" && !c.Bool(cmdutil.FlagJSON) {
		fmt.Fprintf(c.App.ErrWriter, "Warning: governor not reachable (%s): usage, borrowing and queue not shown\n", view.GovernorError)
	}
	return view, nil
}

func listAction(c *cli.Context) error {
	if _, err := cmdutil.Args(c); err != nil {
		return err
	}
	view, err := collect(c)
	if err != nil {
		return err
	}
	if c.Bool(cmdutil.FlagJSON) {
		return cmdutil.JSON(c.App.Writer, view)
	}
	if len(view.Tenants) == 0 {
		fmt.Fprintln(c.App.Writer, "No tenants (no namespace carries allot.* meta)")
		return nil
	}
	rows := make([][]string, 0, len(view.Tenants))
	for _, t := range view.Tenants {
		rows = append(rows, []string{t.Namespace, t.Cohort, fmt.Sprint(t.Weight), cmdutil.Compact(t.Quota), cmdutil.Compact(t.Limit),
			cmdutil.Compact(t.Usage), cmdutil.Compact(t.Borrowed), cmdutil.Compact(t.Lent), fmt.Sprint(t.Queued), shortErr(t.Error)})
	}
	return cmdutil.Table(c.App.Writer,
		[]string{"Name", "Cohort", "Weight", "Quota", "Limit", "Usage", "Borrowed", "Lent", "Queued", "Error"}, rows)
}

func statusAction(c *cli.Context) error {
	args, err := cmdutil.Args(c)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return cmdutil.UsageError(c, "tenant status needs exactly one namespace")
	}
	view, err := collect(c)
	if err != nil {
		return err
	}
	for _, t := range view.Tenants {
		if t.Namespace == args[0] {
			if c.Bool(cmdutil.FlagJSON) {
				return cmdutil.JSON(c.App.Writer, View{Tenants: []Status{t}, GovernorError: view.GovernorError})
			}
			return writeStatus(c, t)
		}
	}
	return fmt.Errorf("no tenant %q: the namespace does not exist, is not readable with this token, or has no allot.* meta", args[0])
}

func writeStatus(c *cli.Context, t Status) error {
	w := c.App.Writer
	classes := strings.Join(t.Classes, ",")
	if classes == "" {
		classes = "<every unrestricted class>"
	}
	err := cmdutil.KVList(w, []cmdutil.KV{{Key: "Name", Value: t.Namespace}, {Key: "Cohort", Value: t.Cohort},
		{Key: "Weight", Value: fmt.Sprint(t.Weight)}, {Key: "Classes", Value: classes},
		{Key: "Default Class", Value: t.DefaultClass}, {Key: "Queued Jobs", Value: fmt.Sprint(t.Queued)},
		{Key: "Dominant Share", Value: fmt.Sprintf("%.3f", t.DominantShare)}, {Key: "Quota Error", Value: cmdutil.Dash(t.Error)}})
	if err != nil {
		return err
	}
	var rows [][]string
	all := gq.Vector{}
	for _, v := range []gq.Vector{t.Quota, t.Limit, t.Lend, t.Usage} {
		for k := range v {
			all[k] = 0
		}
	}
	for _, res := range all.Keys() {
		rows = append(rows, []string{res, amount(t.Quota, res), amount(t.Limit, res), amount(t.Lend, res),
			amountOr0(t.Usage, res), amountOr0(t.Borrowed, res), amountOr0(t.Lent, res)})
	}
	fmt.Fprintln(w)
	return cmdutil.Table(w, []string{"Resource", "Quota", "Limit", "Lend", "Usage", "Borrowed", "Lent"}, rows)
}

func amount(v gq.Vector, res string) string {
	if n, ok := v[res]; ok {
		return cmdutil.Amount(res, n)
	}
	return "-"
}

func amountOr0(v gq.Vector, res string) string { return cmdutil.Amount(res, v[res]) }

func shortErr(e string) string {
	if e == "" {
		return "-"
	}
	if len(e) > 60 {
		return e[:57] + "..."
	}
	return e
}
