// Package app assembles allotctl's commands. Tests build the app with
// buffers for its output and run commands in-process.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/allot-sh/allot/cli/audit"
	"github.com/allot-sh/allot/cli/class"
	"github.com/allot-sh/allot/cli/completion"
	"github.com/allot-sh/allot/cli/decisions"
	"github.com/allot-sh/allot/cli/dev"
	"github.com/allot-sh/allot/cli/idle"
	"github.com/allot-sh/allot/cli/internal/cmdutil"
	"github.com/allot-sh/allot/cli/job"
	"github.com/allot-sh/allot/cli/queue"
	"github.com/allot-sh/allot/cli/quota"
	"github.com/allot-sh/allot/cli/report"
	"github.com/allot-sh/allot/cli/sim"
	"github.com/allot-sh/allot/cli/status"
	"github.com/allot-sh/allot/cli/tenant"
)

// App returns allotctl with its output going to stdout and stderr.
func App(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:                 "allotctl",
		Usage:                "govern a Nomad cluster of GPUs and NPUs",
		Writer:               stdout,
		ErrWriter:            stderr,
		EnableBashCompletion: true,
		HideVersion:          true,
		Flags:                cmdutil.GlobalFlags(),
		// Run turns errors into exit codes; urfave's default handler
		// would call os.Exit inside the app (and inside tests).
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			tenant.Command(),
			quota.Command(),
			queue.Command(),
			job.Command(),
			class.Command(),
			decisions.Command(),
			report.Command(),
			audit.Command(),
			idle.Command(),
			status.Command(),
			dev.Command(),
			sim.Command(),
			completion.Command(),
		},
	}
}

// Run runs allotctl with args (args[0] is the program name) and returns
// the process exit code: 0 on success, 1 on error.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := App(stdout, stderr).RunContext(ctx, args)
	if err == nil {
		return 0
	}
	var exit cli.ExitCoder
	if errors.As(err, &exit) {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return exit.ExitCode()
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	return 1
}
