package idle

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/cli/quota"
	gq "github.com/allot-sh/allot/governor/quota"
)

// MaxExemption bounds how far ahead an exemption may expire.
const MaxExemption = 90 * 24 * time.Hour

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
			return writeMeta(c, gq.PrefixIdle+"exempt."+job, "")
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
	until, err := Expiry(c.String("until"), now)
	if err != nil {
		return cmdutil.UsageError(c, "-until: %v", err)
	}
	reason := strings.TrimSpace(strings.ReplaceAll(c.String("reason"), ";", ","))
	if reason == "" {
		return cmdutil.UsageError(c, "-reason must not be empty")
	}
	return writeMeta(c, gq.PrefixIdle+"exempt."+job, "until="+until.Format(time.RFC3339)+";reason="+reason)
}

// Expiry reads a duration from now or an RFC3339 time, in the future and
// at most MaxExemption ahead.
func Expiry(s string, now time.Time) (time.Time, error) {
	var t time.Time
	if d, err := time.ParseDuration(s); err == nil {
		t = now.Add(d)
	} else if t, err = time.Parse(time.RFC3339, s); err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (48h) nor an RFC3339 time", s)
	}
	if !t.After(now) {
		return time.Time{}, errors.New("the expiry must be in the future")
	}
	if t.Sub(now) > MaxExemption {
		return time.Time{}, fmt.Errorf("the expiry must be within %s", MaxExemption)
	}
	return t.UTC().Truncate(time.Second), nil
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
