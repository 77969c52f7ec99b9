// Package idle implements `allotctl idle`: allocations the governor found
// idle (with the evidence: samples, since when, ladder step, exemption),
// zombie devices, and operator exemptions (`allotctl idle exempt`), which
// are namespace meta only a management token can write.
package idle

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/governor/allotapi"
)

// Command returns `idle`.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "idle",
		Usage: "list idle allocations and zombie devices, grant exemptions",
		Description: "Lists allocations the governor's idle detector saw idle, with the ladder step\n" +
			"(observe, suspect, warned, reclaim, reclaimed, exempt), since when, when the warning\n" +
			"and the action are due, the last samples and any\n" +
			"exemption; zombie devices for management tokens. -namespace keeps one namespace.\n" +
			"  allotctl idle\n  allotctl idle -json\n  allotctl idle exempt -namespace ml -until 48h -reason \"board demo\" train-7b",
		Flags:       cmdutil.ReadFlags(),
		Action:      action,
		Subcommands: []*cli.Command{exemptCommand(), unexemptCommand()},
	}
}

func action(c *cli.Context) error {
	args, err := cmdutil.Args(c)
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return cmdutil.UsageError(c, "idle takes no arguments, got %q", args)
	}
	a, err := cmdutil.Governor(c).Idle(c.Context)
	if err != nil {
		return fmt.Errorf("reading idle allocations from the governor at %s: %w", cmdutil.GovernorAddress(c), err)
	}
	a = Filter(a, cmdutil.Namespace(c, "*"))
	if c.Bool(cmdutil.FlagJSON) {
		return cmdutil.JSON(c.App.Writer, a)
	}
	return Write(c, a, time.Now())
}

// Filter keeps namespace ns ("*": all).
func Filter(a *allotapi.IdleAnswer, ns string) *allotapi.IdleAnswer {
	if ns == "*" {
		return a
	}
	out := *a
	out.Candidates, out.Policies, out.Totals = []allotapi.IdleCandidate{}, []allotapi.IdlePolicy{}, nil
	for _, c := range a.Candidates {
		if c.Namespace == ns {
			out.Candidates = append(out.Candidates, c)
		}
	}
	for _, p := range a.Policies {
		if p.Namespace == ns {
			out.Policies = append(out.Policies, p)
		}
	}
	for _, t := range a.Totals {
		if t.Namespace == ns {
			out.Totals = append(out.Totals, t)
		}
	}
	return &out
}

// Write renders candidates, zombies and policy problems as tables.
func Write(c *cli.Context, a *allotapi.IdleAnswer, now time.Time) error {
	w := c.App.Writer
	if len(a.Candidates) == 0 {
		fmt.Fprintln(w, "No idle allocations")
	} else {
		rows := make([][]string, 0, len(a.Candidates))
		for _, k := range a.Candidates {
			rows = append(rows, []string{k.Namespace, k.JobID, short(k.AllocID), k.Class, k.Step, since(k.IdleSince, now),
				due(k, now), fmt.Sprint(k.Devices), samples(k.Samples), exemption(k.Exemption)})
		}
		if err := cmdutil.Table(w, []string{"Namespace", "Job", "Alloc", "Class", "Step", "Idle for", "Action",
			"Devices", "Last samples (util pct/MiB)", "Exemption"}, rows); err != nil {
			return err
		}
	}
	if len(a.Zombies) > 0 {
		fmt.Fprintln(w, "\nZombie devices (memory or processes, no live allocation):")
		rows := make([][]string, 0, len(a.Zombies))
		for _, z := range a.Zombies {
			rows = append(rows, []string{z.Node, z.DeviceID, fmt.Sprint(z.MemoryMiB), fmt.Sprint(z.Processes), since(z.Since, now)})
		}
		if err := cmdutil.Table(w, []string{"Node", "Device", "Memory MiB", "Processes", "For"}, rows); err != nil {
			return err
		}
	}
	if len(a.Totals) > 0 {
		fmt.Fprintln(w, "\nLedger totals:")
		rows := make([][]string, 0, len(a.Totals))
		for _, t := range a.Totals {
			rows = append(rows, []string{t.Namespace, fmt.Sprint(t.Warnings), fmt.Sprint(t.Reclaims), fmt.Sprint(t.ReleasedDevices),
				fmt.Sprintf("%.3f", t.IdleGPUHours), fmt.Sprintf("%.3f", t.ReclaimedGPUHours)})
		}
		if err := cmdutil.Table(w, []string{"Namespace", "Warnings", "Reclaims", "Released devices", "Idle GPU-h", "Reclaimed GPU-h"}, rows); err != nil {
			return err
		}
	}
	for _, p := range a.Policies {
		for _, pr := range p.Problems {
			fmt.Fprintf(c.App.ErrWriter, "namespace %s: refused %s\n", p.Namespace, pr)
		}
	}
	return nil
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func since(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String()
}

func due(k allotapi.IdleCandidate, now time.Time) string {
	switch {
	case k.Step == "suspect" && k.Action == "warn":
		return fmt.Sprintf("warning in %s", k.WarnAt.Sub(now).Round(time.Second))
	case k.Step == "suspect":
		return fmt.Sprintf("warning in %s, %s in %s", k.WarnAt.Sub(now).Round(time.Second), k.Action, k.DueAt.Sub(now).Round(time.Second))
	case k.Step == "warned" && k.Action == "warn":
		return "warn only"
	case k.Step == "warned":
		return fmt.Sprintf("%s in %s", k.Action, k.DueAt.Sub(now).Round(time.Second))
	case k.Step == "reclaim" || k.Step == "reclaimed":
		return k.Action
	}
	return "-"
}

func samples(ss []allotapi.IdleSample) string {
	if len(ss) > 4 {
		ss = ss[len(ss)-4:]
	}
	parts := make([]string, 0, len(ss))
	for _, s := range ss {
		if !s.Known {
			parts = append(parts, "?")
			continue
		}
		parts = append(parts, fmt.Sprintf("%.0f/%d", s.UtilPct, s.MemoryMiB))
	}
	return cmdutil.Dash(strings.Join(parts, " "))
}

func exemption(e *allotapi.IdleExemption) string {
	if e == nil {
		return "-"
	}
	return fmt.Sprintf("until %s: %s", e.Until.UTC().Format(time.RFC3339), e.Reason)
}
