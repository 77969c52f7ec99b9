// Package decisions implements `allotctl decisions`: the governor's recent
// preemptions, requeues and holds, newest first, with victims, the work
// they lost and the reason.
package decisions

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/governor/allotapi"
)

// Command returns `decisions`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "decisions",
		Usage: "list recent preemptions, requeues and holds with victims and reasons",
		Description: "Lists what the governor did to running jobs, newest first: preemptions\n" +
			"(preemptor, victims, work each victim lost since its last checkpoint),\n" +
			"gang-timeout requeues and holds of jobs registered straight to Nomad over\n" +
			"their limit. With -namespace only decisions whose job or victims are in it.\n" +
			"  allotctl decisions\n  allotctl decisions -namespace ml-research",
		Flags:  cmdutil.ReadFlags(),
		Action: action,
	}
}

func action(c *cli.Context) error {
	args, err := cmdutil.Args(c)
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return cmdutil.UsageError(c, "%s takes no arguments, got %q", "decisions", args)
	}
	list, err := cmdutil.Governor(c).Decisions(c.Context)
	if err != nil {
		return fmt.Errorf("reading decisions from the governor at %s: %w", cmdutil.GovernorAddress(c), err)
	}
	out := Filter(list, cmdutil.Namespace(c, "*"))
	if c.Bool(cmdutil.FlagJSON) {
		return cmdutil.JSON(c.App.Writer, out)
	}
	return Write(c, out)
}

// Filter keeps the decisions whose job or one of whose victims is in
// namespace ns ("*": all).
func Filter(in *allotapi.DecisionList, ns string) *allotapi.DecisionList {
	out := &allotapi.DecisionList{Decisions: []allotapi.Decision{}}
	for _, d := range in.Decisions {
		if ns == "*" || d.Namespace == ns || hasVictimIn(d, ns) {
			out.Decisions = append(out.Decisions, d)
		}
	}
	return out
}

func hasVictimIn(d allotapi.Decision, ns string) bool {
	for _, v := range d.Victims {
		if v.Namespace == ns {
			return true
		}
	}
	return false
}

// Write renders the decisions as a table, one row per decision.
func Write(c *cli.Context, out *allotapi.DecisionList) error {
	if len(out.Decisions) == 0 {
		fmt.Fprintln(c.App.Writer, "No preemptions, requeues or holds recorded")
		return nil
	}
	rows := make([][]string, 0, len(out.Decisions))
	for _, d := range out.Decisions {
		rows = append(rows, []string{d.Time.UTC().Format(time.RFC3339), d.Kind, d.Cause, d.Namespace + "/" + d.JobID,
			victims(d.Victims), cmdutil.Dash(d.Reason)})
	}
	return cmdutil.Table(c.App.Writer, []string{"Time", "Kind", "Cause", "Job", "Victims (lost work)", "Reason"}, rows)
}

func victims(vs []allotapi.Victim) string {
	if len(vs) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
		lost := (time.Duration(v.LostWorkSeconds * float64(time.Second))).Round(time.Second)
		parts = append(parts, fmt.Sprintf("%s/%s (%s)", v.Namespace, v.JobID, lost))
	}
	return strings.Join(parts, ", ")
}
