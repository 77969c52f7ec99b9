// Package quota implements `allotctl quota`: read and write the allot.*
// quota meta of tenant namespaces. Every write is checked with the
// governor's own quota parser first and written nowhere when it fails.
package quota

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	gq "github.com/allot-sh/allot/governor/quota"
)

// Command returns the `quota` noun.
func Command() *cli.Command {
	return &cli.Command{
		Name:  "quota",
		Usage: "read and write tenant quotas (namespace meta)",
		Subcommands: []*cli.Command{
			setCommand(), getCommand(), unsetCommand(), applyCommand(),
		},
	}
}

func setCommand() *cli.Command {
	return &cli.Command{
		Name:         "set",
		BashComplete: cmdutil.CompleteNamespaces,
		Usage:        "set quota, limits, lend, cohort, weight or classes of a tenant",
		ArgsUsage:    "<namespace> [resource=amount ...]",
		Description: "Sets allot.quota.<resource> for every resource=amount argument, and the keys\n" +
			"named by the flags; other keys stay. Example:\n" +
			"  allotctl quota set ml-research gpu=8 nvidia/gpu/H200=4 memory=256GiB -limit gpu=16 -cohort research -weight 2",
		Flags: append(cmdutil.ConnFlags(), cmdutil.ConfigFlag(),
			&cli.StringSliceFlag{Name: "limit", Usage: "hard limit resource=amount (repeatable)"},
			&cli.StringSliceFlag{Name: "lend", Usage: "most that may be lent, resource=amount (repeatable)"},
			&cli.StringFlag{Name: "cohort", Usage: "sharing group"},
			&cli.StringFlag{Name: "weight", Usage: "fair-share weight (> 0)"},
			&cli.StringFlag{Name: "classes", Usage: "comma list of classes the tenant may use"},
			&cli.StringFlag{Name: "default-class", Usage: "class of jobs that name none"},
		),
		Action: setAction,
	}
}

func setAction(c *cli.Context) error {
	args, err := cmdutil.Args(c)
	if err != nil {
		return err
	}
	if len(args) < 1 {
		return cmdutil.UsageError(c, "quota set needs a namespace")
	}
	edits, err := setEdits(c, args[1:])
	if err != nil {
		return err
	}
	if len(edits) == 0 {
		return cmdutil.UsageError(c, "quota set needs at least one resource=amount or flag")
	}
	return write(c, args[0], edits)
}

// setEdits collects the edits of `quota set`, checking each pair.
func setEdits(c *cli.Context, pairs []string) (Edits, error) {
	edits := Edits{}
	add := func(prefix string, list []string) error {
		for _, p := range list {
			k, v, err := ParsePair(prefix, p)
			if err != nil {
				return err
			}
			edits.set(k, v)
		}
		return nil
	}
	if err := add(gq.PrefixQuota, pairs); err != nil {
		return nil, err
	}
	if err := add(gq.PrefixLimit, c.StringSlice("limit")); err != nil {
		return nil, err
	}
	if err := add(gq.PrefixLend, c.StringSlice("lend")); err != nil {
		return nil, err
	}
	for flag, key := range map[string]string{"cohort": gq.KeyCohort, "weight": gq.KeyWeight,
		"classes": gq.KeyClasses, "default-class": gq.KeyDefaultClass} {
		if c.IsSet(flag) {
			edits.set(key, strings.TrimSpace(c.String(flag)))
		}
	}
	return edits, nil
}

// write applies edits to namespace ns after validating the result.
func write(c *cli.Context, ns string, edits Edits) error {
	nc, err := cmdutil.Nomad(c)
	if err != nil {
		return err
	}
	classes, err := cmdutil.Classes(c)
	if err != nil {
		return err
	}
	store := &Store{Nomad: nc}
	before, after, err := store.Update(ns, func(meta map[string]string) (map[string]string, error) {
		next, err := edits.Apply(meta)
		if err != nil {
			return nil, fmt.Errorf("namespace %q: %w", ns, err)
		}
		if _, err := Validate(ns, next, classes); err != nil {
			return nil, err
		}
		return next, nil
	})
	if err != nil {
		return err
	}
	WriteDiff(c.App.Writer, ns, Diff(before, after))
	return nil
}

func unsetCommand() *cli.Command {
	return &cli.Command{
		Name:         "unset",
		BashComplete: cmdutil.CompleteNamespaces,
		Usage:        "remove quota keys of a tenant",
		ArgsUsage:    "<namespace> [resource ...]",
		Description: "Removes allot.quota.<resource> for every resource argument and the keys named\n" +
			"by the flags; -all removes every allot.* key (the namespace is no longer governed).\n" +
			"  allotctl quota unset ml-research nvidia/gpu/H200 -limit gpu -cohort",
		Flags: append(cmdutil.ConnFlags(), cmdutil.ConfigFlag(),
			&cli.StringSliceFlag{Name: "limit", Usage: "remove the limit of this resource (repeatable)"},
			&cli.StringSliceFlag{Name: "lend", Usage: "remove the lend cap of this resource (repeatable)"},
			&cli.BoolFlag{Name: "cohort", Usage: "remove allot.cohort"},
			&cli.BoolFlag{Name: "weight", Usage: "remove allot.weight"},
			&cli.BoolFlag{Name: "classes", Usage: "remove allot.classes"},
			&cli.BoolFlag{Name: "default-class", Usage: "remove allot.default-class"},
			&cli.BoolFlag{Name: "all", Usage: "remove every allot.* key"},
		),
		Action: unsetAction,
	}
}

func unsetAction(c *cli.Context) error {
	args, err := cmdutil.Args(c)
	if err != nil {
		return err
	}
	if len(args) < 1 {
		return cmdutil.UsageError(c, "quota unset needs a namespace")
	}
	ns := args[0]
	if c.Bool("all") {
		return unsetAll(c, ns)
	}
	edits := Edits{}
	for prefix, list := range map[string][]string{gq.PrefixQuota: args[1:], gq.PrefixLimit: c.StringSlice("limit"), gq.PrefixLend: c.StringSlice("lend")} {
		for _, res := range list {
			if err := gq.CheckResource(res); err != nil {
				return err
			}
			edits[prefix+res] = nil
		}
	}
	for flag, key := range map[string]string{"cohort": gq.KeyCohort, "weight": gq.KeyWeight,
		"classes": gq.KeyClasses, "default-class": gq.KeyDefaultClass} {
		if c.Bool(flag) {
			edits[key] = nil
		}
	}
	if len(edits) == 0 {
		return cmdutil.UsageError(c, "quota unset needs a resource, a flag naming a key, or -all")
	}
	return write(c, ns, edits)
}

// unsetAll removes every allot.* key.
func unsetAll(c *cli.Context, ns string) error {
	nc, err := cmdutil.Nomad(c)
	if err != nil {
		return err
	}
	store := &Store{Nomad: nc}
	before, after, err := store.Update(ns, func(meta map[string]string) (map[string]string, error) {
		return Replace(meta, nil), nil
	})
	if err != nil {
		return err
	}
	WriteDiff(c.App.Writer, ns, Diff(before, after))
	return nil
}
