// Package audit implements `allotctl audit`: the ledger's hash-chained
// audit log (namespace meta changes with their actor, governor decisions),
// and with -verify a check of the whole chain (management token).
package audit

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/cli/report"
	"github.com/allot-sh/allot/governor/ledger"
)

// ErrTampered is returned when -verify finds the chain broken.
var ErrTampered = cli.Exit("the audit chain is broken", 3)

// Command returns `audit`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "who changed quotas, classes and weights, and what the governor decided",
		Description: "Lists audit entries oldest first: namespace meta changes (allot.* keys) with the\n" +
			"token accessor and name of who made them through the governor, or actor unknown\n" +
			"when they were written straight to Nomad; and preemptions, requeues and holds.\n" +
			"-verify checks the hash chain (management token); exit code 3 when broken.\n" +
			"  allotctl audit -since 24h\n  allotctl audit -kind namespace-meta -namespace ml\n  allotctl audit -verify",
		Flags: append(report.Flags(false),
			&cli.StringFlag{Name: "kind", Usage: "only entries whose kind starts with this (namespace-meta, decision:)"},
			&cli.BoolFlag{Name: "verify", Usage: "verify the hash chain"}),
		Action: action,
	}
}

func action(c *cli.Context) error {
	args, err := cmdutil.Args(c)
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return cmdutil.UsageError(c, "audit takes no arguments, got %q", args)
	}
	v, err := report.Window(c, time.Now())
	if err != nil {
		return err
	}
	if k := c.String("kind"); k != "" {
		v.Set("kind", k)
	}
	if c.Bool("verify") {
		v.Set("verify", "true")
	}
	var out ledger.AuditAnswer
	if err := report.Get(c, "/allot/v1/audit", v, &out); err != nil {
		return err
	}
	out.Entries = filter(out.Entries, cmdutil.Namespace(c, "*"))
	header, rows := Table(out.Entries)
	if err := report.Output(c, out, header, rows); err != nil {
		return err
	}
	if out.Verified != nil && !c.Bool(cmdutil.FlagJSON) {
		if out.VerifyError != "" {
			fmt.Fprintf(c.App.ErrWriter, "Chain broken after %d entries: %s\n", *out.Verified, out.VerifyError)
		} else {
			fmt.Fprintf(c.App.Writer, "Chain verified: %d entries\n", *out.Verified)
		}
	}
	if out.VerifyError != "" {
		return ErrTampered
	}
	return nil
}

func filter(es []ledger.Entry, ns string) []ledger.Entry {
	if ns == "*" {
		return es
	}
	out := []ledger.Entry{}
	for _, e := range es {
		if e.Namespace == ns {
			out = append(out, e)
		}
	}
	return out
}

// Table renders entries, one per row.
func Table(es []ledger.Entry) ([]string, [][]string) {
	header := []string{"Seq", "Time", "Kind", "Namespace", "Subject", "Actor", "Old", "New", "Detail"}
	rows := make([][]string, 0, len(es))
	for _, e := range es {
		actor := e.Actor
		if e.ActorName != "" {
			actor += " (" + e.ActorName + ")"
		}
		rows = append(rows, []string{fmt.Sprint(e.Seq), e.Time.UTC().Format(time.RFC3339), e.Kind, e.Namespace,
			cmdutil.Dash(e.Subject), actor, cmdutil.Dash(oneLine(e.Old)), cmdutil.Dash(oneLine(e.New)), cmdutil.Dash(e.Detail)})
	}
	return header, rows
}

func oneLine(s string) string {
	out := []rune{}
	for _, r := range s {
		if r == '\n' {
			r = ' '
		}
		out = append(out, r)
	}
	return string(trimSpace(out))
}

func trimSpace(r []rune) []rune {
	for len(r) > 0 && r[len(r)-1] == ' ' {
		r = r[:len(r)-1]
	}
	return r
}
