package job

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/governor/allotapi"
)

// requeueCommand is `allotctl job requeue`.
func requeueCommand() *cli.Command {
	return &cli.Command{
		Name:      "requeue",
		Usage:     "checkpoint-stop a running job and put it back in the governor's queue",
		ArgsUsage: "<job id>",
		Description: "The governor stops the job the way it stops a preemption victim: Nomad stops its\n" +
			"allocations, the ckpt driver checkpoints each task before it exits, and the job waits\n" +
			"in the queue (with the requeue back-off) until the governor admits it again; it then\n" +
			"resumes from its checkpoint. Your token needs submit-job in the job's namespace.\n" +
			"The requeue is listed in `allotctl decisions` and written to the audit log.\n" +
			"  allotctl job requeue -namespace ml-research -reason \"drain gpu-3\" train-gpu",
		Flags: append(cmdutil.ReadFlags(),
			&cli.StringFlag{Name: "reason", Usage: "why (recorded with the decision and in the audit log)"}),
		Action: requeueAction,
	}
}

func requeueAction(c *cli.Context) error {
	args, err := cmdutil.Args(c)
	if err != nil {
		return err
	}
	if len(args) != 1 || args[0] == "" {
		return cmdutil.UsageError(c, "job requeue needs exactly one job ID")
	}
	ns := cmdutil.Namespace(c, "default")
	res, err := cmdutil.Governor(c).Requeue(c.Context, ns, args[0], c.String("reason"))
	if err != nil {
		return requeueError(c, ns, args[0], err)
	}
	if c.Bool(cmdutil.FlagJSON) {
		return cmdutil.JSON(c.App.Writer, res)
	}
	return writeRequeue(c.App.Writer, res)
}

// requeueError words a refusal for the job.
func requeueError(c *cli.Context, ns, id string, err error) error {
	var se *allotapi.StatusError
	if !errors.As(err, &se) {
		return fmt.Errorf("asking the governor at %s: %w", cmdutil.GovernorAddress(c), err)
	}
	switch se.Status {
	case http.StatusForbidden:
		return fmt.Errorf("requeueing job %q in namespace %q: %s", id, ns, se.Msg)
	case http.StatusServiceUnavailable:
		return fmt.Errorf("requeueing job %q in namespace %q: the governor at %s cannot now: %s", id, ns, cmdutil.GovernorAddress(c), se.Msg)
	}
	return fmt.Errorf("requeueing job %q in namespace %q: %s", id, ns, se.Msg)
}

// writeRequeue prints the answer the way nomad prints a job write.
func writeRequeue(w io.Writer, r *allotapi.RequeueResult) error {
	fmt.Fprintf(w, "==> Requeued job %q in namespace %q\n", r.JobID, r.Namespace)
	fmt.Fprintln(w, "    Its allocations checkpoint and stop; it waits in the queue and resumes from its checkpoint when admitted again.")
	fmt.Fprintln(w)
	audited := "yes"
	if !r.Audited {
		audited = "no (" + r.AuditError + ")"
	}
	actor := r.Actor
	if r.ActorName != "" {
		actor = r.ActorName + " (" + r.Actor + ")"
	}
	return cmdutil.KVList(w, []cmdutil.KV{{Key: "Job", Value: r.JobID}, {Key: "Namespace", Value: r.Namespace},
		{Key: "State", Value: r.State}, {Key: "Actor", Value: actor}, {Key: "Reason", Value: cmdutil.Dash(r.Reason)},
		{Key: "Audited", Value: audited}})
}
