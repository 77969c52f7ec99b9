package idle

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/cli/quota"
	"github.com/allot-sh/allot/governor/allotapi"
)

func exemptCommand() *cli.Command {
	return &cli.Command{
		Name:      "exempt",
		Usage:     "keep a job off the idle ladder until an expiry, with a reason (operators only)",
		ArgsUsage: "JOB",
		Description: "Writes allot.idle.exempt.<JOB> = until=<RFC3339>;reason=<text> into the namespace's meta.\n" +
			"Nomad lets only management tokens write namespace meta, so a tenant cannot exempt\n" +
			"itself; the ledger's audit records who did it when it goes through the governor.\n" +
			"  allotctl idle exempt -namespace ml -until 48h -reason \"interactive debugging\" train-7b",
		Flags: append(cmdutil.ConnFlags(),
			&cli.StringFlag{Name: "until", Usage: "expiry: a duration from now (48h) or an RFC3339 time", Required: true},
			&cli.StringFlag{Name: "reason", Usage: "why the job may sit idle", Required: true}),
		Action: exemptAction,
	}
}

func unexemptCommand() *cli.Command {
	return &cli.Command{
		Name:      "unexempt",
		Usage:     "withdraw a job's idle exemption (operators only)",
		ArgsUsage: "JOB",
		Flags:     cmdutil.ConnFlags(),
		Action: func(c *cli.Context) error {
			job, err := oneJob(c)
			if err != nil {
				return err
			}
			return writeMeta(c, allotapi.ExemptKeyPrefix+job, "")
		},
	}
}

func oneJob(c *cli.Context) (string, error) {
	args, err := cmdutil.Args(c)
	if err != nil {
		return "", err
	}
	if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
		return "", cmdutil.UsageError(c, "want one job ID, got %q", args)
	}
	return args[0], nil
}

func exemptAction(c *cli.Context) error {
	job, err := oneJob(c)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	until, err := allotapi.ExemptionExpiry(c.String("until"), now)
	if err != nil {
		return cmdutil.UsageError(c, "-until: %v", err)
	}
	reason, err := allotapi.ExemptionReason(c.String("reason"))
	if err != nil {
		return cmdutil.UsageError(c, "-reason: %v", err)
	}
	return writeMeta(c, allotapi.ExemptKeyPrefix+job, allotapi.IdleExemption{Until: until, Reason: reason}.MetaValue())
}

// writeMeta sets (or with an empty value removes) one namespace meta key.
func writeMeta(c *cli.Context, key, val string) error {
	ns := cmdutil.Namespace(c, "default")
	nc, err := cmdutil.Nomad(c)
	if err != nil {
		return err
	}
	store := &quota.Store{Nomad: nc}
	before, after, err := store.Update(ns, func(meta map[string]string) (map[string]string, error) {
		next := map[string]string{}
		for k, v := range meta {
			next[k] = v
		}
		if val == "" {
			delete(next, key)
		} else {
			next[key] = val
		}
		return next, nil
	})
	if err != nil {
		return fmt.Errorf("writing %s in namespace %s (namespace meta needs a management token): %w", key, ns, err)
	}
	quota.WriteDiff(c.App.Writer, ns, quota.Diff(before, after))
	return nil
}
