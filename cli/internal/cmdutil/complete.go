package cmdutil

import (
	"fmt"

	"github.com/hashicorp/nomad/api"
	"github.com/urfave/cli/v2"
)

// CompleteNamespaces is a BashComplete function for commands whose first
// argument is a namespace: it prints the namespaces Nomad lists (nothing
// when Nomad cannot be reached), then the command's flags.
func CompleteNamespaces(c *cli.Context) {
	if c.NArg() == 0 {
		if nc, err := Nomad(c); err == nil {
			if nss, _, err := nc.Namespaces().List(&api.QueryOptions{}); err == nil {
				for _, ns := range nss {
					fmt.Fprintln(c.App.Writer, ns.Name)
				}
			}
		}
	}
	cli.DefaultCompleteWithFlags(c.Command)(c)
}
