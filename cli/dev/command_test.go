package dev

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
	"github.com/urfave/cli/v2"
)

// parseUp runs `dev up` with args through the real flag set, capturing the
// Options instead of starting anything.
func parseUp(t *testing.T, args ...string) Options {
	t.Helper()
	var got Options
	cmd := Command()
	up := cmd.Subcommands[0]
	up.Action = func(c *cli.Context) error {
		var err error
		got, err = optionsFrom(c)
		return err
	}
	app := &cli.App{Commands: []*cli.Command{cmd}}
	must.NoError(t, app.RunContext(context.Background(), append([]string{"allotctl", "dev", "up"}, args...)))
	return got
}

func TestOptionsFrom(t *testing.T) {
	cases := map[string]struct {
		args []string
		want func(*Options)
	}{
		"defaults": {
			want: func(o *Options) {},
		},
		"every port": {
			args: []string{"-http-port", "1", "-rpc-port", "2", "-serf-port", "3", "-governor-port", "4"},
			want: func(o *Options) { o.HTTPPort, o.RPCPort, o.SerfPort, o.GovernorPort = 1, 2, 3, 4 },
		},
		"inventory and log level": {
			args: []string{"-inventory", "/inv.hcl", "-log-level", "DEBUG"},
			want: func(o *Options) { o.InventoryFile, o.LogLevel = "/inv.hcl", "DEBUG" },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"-bin-dir", "/opt/allot/bin", "-dir", "/var/dev"}, tc.args...)
			want := Options{
				Dir: "/var/dev", BinDir: "/opt/allot/bin", LogLevel: "INFO",
				HTTPPort: 4646, RPCPort: 4647, SerfPort: 4648, GovernorPort: 4680,
				InventoryFile: filepath.Join("/opt/allot", "device-plugin", "inventory", "examples", "dev-node.hcl"),
				JobspecsDir:   "/opt/allot/jobspecs",
			}
			tc.want(&want)
			must.Eq(t, want, parseUp(t, args...))
		})
	}
}

func TestCheckPortsFree_RejectsInvalidPorts(t *testing.T) {
	must.ErrorContains(t, checkPortsFree(0), "not a valid port")
	must.ErrorContains(t, checkPortsFree(70000), "not a valid port")
}
