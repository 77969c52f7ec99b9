package quota

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/internal/cmdutil"
	gq "github.com/allot-sh/allot/governor/quota"
)

// GetOutput is the JSON of `quota get`.
type GetOutput struct {
	Namespace string
	// Meta holds the namespace's allot.* keys as written.
	Meta map[string]string
	// Tenant is the quota as the governor's parser reads the meta.
	Tenant gq.Tenant
	// Error is the parser's error; the governor then keeps the last valid
	// quota.
	Error string `json:",omitempty"`
}

func getCommand() *cli.Command {
	return &cli.Command{
		Name:         "get",
		BashComplete: cmdutil.CompleteNamespaces,
		Usage:        "show the quota of a tenant as the governor reads it",
		ArgsUsage:    "<namespace>",
		Description:  "  allotctl quota get ml-research",
		Flags:        append(cmdutil.ReadFlags(), cmdutil.ConfigFlag()),
		Action:       getAction,
	}
}

func getAction(c *cli.Context) error {
	args, err := cmdutil.Args(c)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return cmdutil.UsageError(c, "quota get needs exactly one namespace")
	}
	nc, err := cmdutil.Nomad(c)
	if err != nil {
		return err
	}
	classes, err := cmdutil.Classes(c)
	if err != nil {
		return err
	}
	ns, err := (&Store{Nomad: nc}).Get(args[0])
	if err != nil {
		return err
	}
	out := GetOutput{Namespace: ns.Name, Meta: AllotKeys(ns.Meta)}
	out.Tenant, err = gq.Parse(ns.Name, ns.Meta, classes)
	if err != nil {
		out.Error = err.Error()
	}
	if c.Bool(cmdutil.FlagJSON) {
		return cmdutil.JSON(c.App.Writer, out)
	}
	return writeGet(c, out)
}

func writeGet(c *cli.Context, out GetOutput) error {
	w := c.App.Writer
	t := out.Tenant
	if len(out.Meta) == 0 {
		_, err := w.Write([]byte("Namespace " + out.Namespace + " is not governed (no allot.* meta).\n"))
		return err
	}
	classes := strings.Join(t.Classes, ",")
	if classes == "" {
		classes = "<every unrestricted class>"
	}
	if err := cmdutil.KVList(w, []cmdutil.KV{{Key: "Namespace", Value: out.Namespace}, {Key: "Cohort", Value: t.Cohort},
		{Key: "Weight", Value: FormatWeight(t.Weight)}, {Key: "Classes", Value: classes},
		{Key: "Default Class", Value: t.DefaultClass}, {Key: "Error", Value: cmdutil.Dash(out.Error)}}); err != nil {
		return err
	}
	var rows [][]string
	for _, res := range resources(t.Quota, t.Limit, t.Lend) {
		rows = append(rows, []string{res, amount(t.Quota, res), amount(t.Limit, res), amount(t.Lend, res)})
	}
	if _, err := w.Write([]byte("\n")); err != nil {
		return err
	}
	return cmdutil.Table(w, []string{"Resource", "Quota", "Limit", "Lend"}, rows)
}

// resources lists the resources named in any of the vectors, sorted.
func resources(vs ...gq.Vector) []string {
	all := gq.Vector{}
	for _, v := range vs {
		for k := range v {
			all[k] = 0
		}
	}
	return all.Keys()
}

// amount renders v[res] with its unit, or "-" when absent.
func amount(v gq.Vector, res string) string {
	n, ok := v[res]
	if !ok {
		return "-"
	}
	return cmdutil.Amount(res, n)
}
