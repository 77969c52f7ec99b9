// Package class implements `allotctl class list`: the governor's priority
// classes with their Nomad priority and whether their jobs may be
// preempted.
package class

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/governor/allotapi"
)

// Command returns `class` with its `list` subcommand.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "class",
		Usage: "show the governor's priority classes",
		Subcommands: []*cli.Command{{
			Name:  "list",
			Usage: "list the priority classes, highest priority first",
			Description: "Lists the classes jobs may name in meta allot.class: the Nomad priority the\n" +
				"governor gives their jobs, whether those jobs may be preempted, and whether\n" +
				"only tenants whose allot.classes names the class may use it.\n  allotctl class list",
			Flags:  cmdutil.ReadFlags(),
			Action: list,
		}},
	}
}

func list(c *cli.Context) error {
	args, err := cmdutil.Args(c)
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return cmdutil.UsageError(c, "%s takes no arguments, got %q", "class list", args)
	}
	out, err := cmdutil.Governor(c).Classes(c.Context)
	if err != nil {
		return fmt.Errorf("reading the classes from the governor at %s: %w", cmdutil.GovernorAddress(c), err)
	}
	if c.Bool(cmdutil.FlagJSON) {
		return cmdutil.JSON(c.App.Writer, out)
	}
	return Write(c, out)
}

// Write renders the classes as a table.
func Write(c *cli.Context, out *allotapi.ClassList) error {
	rows := make([][]string, 0, len(out.Classes))
	for _, cl := range out.Classes {
		rows = append(rows, []string{cl.Name, fmt.Sprint(cl.Priority), yesNo(cl.Preemptible), yesNo(cl.Restricted)})
	}
	return cmdutil.Table(c.App.Writer, []string{"Name", "Priority", "Preemptible", "Restricted"}, rows)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
