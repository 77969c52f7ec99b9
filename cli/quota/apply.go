package quota

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
)

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:  "apply",
		Usage: "make tenants' quotas match a file (declarative), showing the diff",
		Description: "Each tenant block of the file is the complete allot.* meta of one existing\n" +
			"namespace: keys it does not name are removed, other meta stays. Every tenant\n" +
			"is validated before anything is written; -dry-run only shows the diff.\n\n" +
			"  tenant \"ml-research\" {\n" +
			"    cohort  = \"research\"\n" +
			"    weight  = 2\n" +
			"    quota   = { gpu = 8, \"nvidia/gpu/H200\" = 4, memory = \"256GiB\" }\n" +
			"    limit   = { gpu = 16 }\n" +
			"    lend    = { gpu = 4 }\n" +
			"    classes = [\"high\", \"standard\"]\n" +
			"    default_class = \"standard\"\n" +
			"  }\n\n" +
			"  allotctl quota apply -f tenants.hcl -dry-run",
		Flags: append(cmdutil.ConnFlags(), cmdutil.ConfigFlag(),
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Required: true, Usage: "tenants file (HCL)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "show the diff, write nothing"},
		),
		Action: applyAction,
	}
}

// planned is one namespace's change.
type planned struct {
	ns            string
	allot         map[string]string
	before, after map[string]string
}

func applyAction(c *cli.Context) error {
	if _, err := cmdutil.Args(c); err != nil {
		return err
	}
	desired, err := LoadFile(c.String("file"))
	if err != nil {
		return err
	}
	nc, err := cmdutil.Nomad(c)
	if err != nil {
		return err
	}
	classes, err := cmdutil.Classes(c)
	if err != nil {
		return err
	}
	store := &Store{Nomad: nc}
	plan, err := planApply(store, desired, classes)
	if err != nil {
		return err
	}
	changed := 0
	for _, p := range plan {
		d := Diff(p.before, p.after)
		WriteDiff(c.App.Writer, p.ns, d)
		if len(d) > 0 {
			changed++
		}
	}
	if c.Bool("dry-run") {
		fmt.Fprintf(c.App.Writer, "\nDry run: %d namespace(s) would change; nothing written.\n", changed)
		return nil
	}
	return commit(c, store, plan, classes)
}

// planApply reads every namespace and validates its new meta; any problem
// anywhere fails the whole apply before a write.
func planApply(store *Store, desired []Desired, classes map[string]bool) ([]planned, error) {
	var plan []planned
	var errs []error
	for _, d := range desired {
		ns, err := store.Get(d.Namespace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		after := Replace(ns.Meta, d.Allot)
		if _, err := Validate(d.Namespace, after, classes); err != nil {
			errs = append(errs, err)
			continue
		}
		plan = append(plan, planned{ns: d.Namespace, allot: d.Allot, before: ns.Meta, after: after})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("nothing written: %w", errors.Join(errs...))
	}
	return plan, nil
}

// commit writes the planned namespaces one by one (Nomad has no
// multi-namespace transaction) and says which were written if one fails.
func commit(c *cli.Context, store *Store, plan []planned, classes map[string]bool) error {
	var written []string
	for _, p := range plan {
		p := p
		_, _, err := store.Update(p.ns, func(meta map[string]string) (map[string]string, error) {
			next := Replace(meta, p.allot)
			_, err := Validate(p.ns, next, classes)
			return next, err
		})
		if err != nil {
			return fmt.Errorf("%w (written before the failure: %v)", err, written)
		}
		written = append(written, p.ns)
	}
	fmt.Fprintf(c.App.Writer, "\nApplied: %d namespace(s) checked.\n", len(written))
	return nil
}
