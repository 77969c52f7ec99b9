// Package status implements `allotctl status`: the governor answering
// and, with several governors (docs/ha.md), the leader, its term, since
// when, and every member. The governor serves it (GET /allot/v1/status);
// the command only renders.
package status

import (
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/governor/allotapi"
)

// Command returns `status`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the governor's leader, term and members (HA)",
		Description: "Asks the governor at -address which governor leads, in which term and since\n" +
			"when, and lists the members (docs/ha.md). A single governor (no ha block) says so.\n" +
			"  allotctl status\n  allotctl status -json",
		Flags:  cmdutil.ReadFlags(),
		Action: action,
	}
}

func action(c *cli.Context) error {
	if _, err := cmdutil.Args(c); err != nil {
		return err
	}
	st, err := cmdutil.Governor(c).Status(c.Context)
	if err != nil {
		return fmt.Errorf("reading the status from the governor at %s: %w", cmdutil.GovernorAddress(c), err)
	}
	if c.Bool(cmdutil.FlagJSON) {
		return cmdutil.JSON(c.App.Writer, st)
	}
	return write(c.App.Writer, st, time.Now())
}

func write(w io.Writer, st *allotapi.Status, now time.Time) error {
	ready := "yes"
	if !st.Ready {
		ready = "no"
	}
	if !st.HA {
		return cmdutil.KVList(w, []cmdutil.KV{{Key: "Mode", Value: "single governor (no ha block)"},
			{Key: "Ready", Value: ready + " (" + st.Reason + ")"}})
	}
	leader, since := "(none)", "-"
	if st.Leader != nil {
		leader = st.Leader.ID + " " + st.Leader.URL
	}
	if !st.Since.IsZero() {
		since = st.Since.UTC().Format(time.RFC3339) + " (" + cmdutil.Wait(now, st.Since) + " ago)"
	}
	role := "standby"
	if st.Leading {
		role = "leader"
	}
	if err := cmdutil.KVList(w, []cmdutil.KV{{Key: "Mode", Value: "HA"}, {Key: "Answered by", Value: st.Member + " (" + role + ")"},
		{Key: "Leader", Value: leader}, {Key: "Term", Value: fmt.Sprint(st.Term)}, {Key: "Since", Value: since},
		{Key: "Ready", Value: ready + " (" + st.Reason + ")"}}); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if st.MembersError != "" {
		fmt.Fprintf(w, "Members: cannot be listed: %s\n", st.MembersError)
		return nil
	}
	rows := make([][]string, 0, len(st.Members))
	for _, m := range st.Members {
		r := "standby"
		if m.Leader {
			r = "leader"
		}
		rows = append(rows, []string{m.ID, m.URL, r})
	}
	return cmdutil.Table(w, []string{"Member", "URL", "Role"}, rows)
}
