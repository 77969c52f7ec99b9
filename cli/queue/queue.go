// Package queue implements `allotctl queue`: the jobs the governor holds,
// in admission order, with what they request, how long they have waited
// and why they are not admitted yet. The governor serves all of it
// (GET /allot/v1/queue); the command only filters and renders.
package queue

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/governor/allotapi"
)

// Output is the JSON of `allotctl queue`.
type Output struct {
	// Total is the length of the whole queue, Jobs the entries shown.
	Total int
	Jobs  []allotapi.QueueEntry
}

// Command returns `queue`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "queue",
		Usage: "list queued jobs with position, class, request, wait and reason",
		Description: "Lists the jobs the governor holds, in the order it will admit them. With\n" +
			"-namespace (or NOMAD_NAMESPACE) only that tenant's jobs; \"*\" shows all.\n" +
			"  allotctl queue\n  allotctl queue -namespace ml-research",
		Flags:  cmdutil.ReadFlags(),
		Action: action,
	}
}

func action(c *cli.Context) error {
	if _, err := cmdutil.Args(c); err != nil {
		return err
	}
	q, err := cmdutil.Governor(c).Queue(c.Context)
	if err != nil {
		return fmt.Errorf("reading the queue from the governor at %s: %w", cmdutil.GovernorAddress(c), err)
	}
	ns := cmdutil.Namespace(c, "*")
	out := Output{Total: q.Total, Jobs: []allotapi.QueueEntry{}}
	for _, e := range q.Jobs {
		if ns == "*" || e.Namespace == ns {
			out.Jobs = append(out.Jobs, e)
		}
	}
	if c.Bool(cmdutil.FlagJSON) {
		return cmdutil.JSON(c.App.Writer, out)
	}
	return write(c, out, time.Now())
}

func write(c *cli.Context, out Output, now time.Time) error {
	if len(out.Jobs) == 0 {
		fmt.Fprintf(c.App.Writer, "No queued jobs (%d in the whole queue)\n", out.Total)
		return nil
	}
	rows := make([][]string, 0, len(out.Jobs))
	for _, e := range out.Jobs {
		rows = append(rows, []string{fmt.Sprint(e.Position), fmt.Sprint(e.TenantPosition), e.Namespace, e.JobID,
			e.Class, cmdutil.Compact(e.Request), cmdutil.Wait(now, e.QueuedAt), e.Reason})
	}
	return cmdutil.Table(c.App.Writer, []string{"Position", "In Tenant", "Namespace", "Job", "Class", "Request", "Wait", "Reason"}, rows)
}
