// Command allotctl administers Allot: tenants, quotas, the queue, and the
// local development environment.
package main

import (
	"context"
	"os"

	"github.com/allot-sh/allot/cli/app"
)

func main() {
	os.Exit(app.Run(context.Background(), os.Args, os.Stdout, os.Stderr))
}
