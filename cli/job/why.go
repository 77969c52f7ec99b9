// Package job implements `allotctl job why`: the governor's decision trace
// for one job — its state, place in the queue, and every admission check
// with its numbers; and `allotctl job requeue` (requeue.go).
package job

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/governor/allotapi"
)

// Command returns the `job` noun with `why` and `requeue`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "job",
		Usage: "explain and requeue governed jobs",
		Subcommands: []*cli.Command{{
			Name:      "why",
			Usage:     "show why a job is queued or admitted: the governor's decision trace",
			ArgsUsage: "<job id>",
			Description: "The job is looked up in -namespace (or NOMAD_NAMESPACE; default \"default\").\n" +
				"  allotctl job why -namespace ml-research train-gpu",
			Flags:  cmdutil.ReadFlags(),
			Action: whyAction,
		}, requeueCommand()},
	}
}

func whyAction(c *cli.Context) error {
	args, err := cmdutil.Args(c)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return cmdutil.UsageError(c, "job why needs exactly one job ID")
	}
	ns := cmdutil.Namespace(c, "default")
	w, err := cmdutil.Governor(c).Why(c.Context, ns, args[0])
	if errors.Is(err, allotapi.ErrNotFound) {
		return fmt.Errorf("job %q in namespace %q is not known to the governor (no such job, or its namespace is not governed): %w", args[0], ns, err)
	}
	if err != nil {
		return fmt.Errorf("asking the governor at %s: %w", cmdutil.GovernorAddress(c), err)
	}
	if c.Bool(cmdutil.FlagJSON) {
		return cmdutil.JSON(c.App.Writer, w)
	}
	return write(c, w, time.Now())
}

func write(c *cli.Context, w *allotapi.Why, now time.Time) error {
	out := c.App.Writer
	kvs := []cmdutil.KV{{Key: "Job", Value: w.JobID}, {Key: "Namespace", Value: w.Namespace},
		{Key: "State", Value: w.State}, {Key: "Class", Value: w.Class}}
	if w.Position > 0 {
		kvs = append(kvs, cmdutil.KV{Key: "Position", Value: fmt.Sprintf("%d in the queue, %d in the tenant", w.Position, w.TenantPosition)})
	}
	if !w.QueuedAt.IsZero() {
		kvs = append(kvs, cmdutil.KV{Key: "Queued At", Value: w.QueuedAt.Format(time.RFC3339) + " (" + cmdutil.Wait(now, w.QueuedAt) + " ago)"})
	}
	kvs = append(kvs, cmdutil.KV{Key: "Reason", Value: cmdutil.Dash(w.Reason)})
	if err := cmdutil.KVList(out, kvs); err != nil {
		return err
	}
	if len(w.Checks) == 0 {
		return nil
	}
	fmt.Fprintln(out, "\nChecks")
	rows := make([][]string, 0, len(w.Checks))
	for _, ch := range w.Checks {
		ok := "fail"
		if ch.OK {
			ok = "ok"
		}
		rows = append(rows, []string{ch.Name, ok, ch.Detail})
	}
	return cmdutil.Table(out, []string{"Check", "Result", "Detail"}, rows)
}
