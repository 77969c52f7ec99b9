package cmdutil

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/urfave/cli/v2"
)

// seen is what a test command saw.
type seen struct {
	args               []string
	address, namespace string
	limits             []string
	json               bool
	err                error
}

// run runs `app [global…] cmd …` and reports what the command saw.
func run(args ...string) (seen, error) {
	var s seen
	app := &cli.App{Name: "t", Flags: GlobalFlags(), Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{},
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{{Name: "cmd", Flags: append(ReadFlags(), &cli.StringSliceFlag{Name: "limit"}),
			Action: func(c *cli.Context) error {
				s.args, s.err = Args(c)
				s.address, s.namespace = Nomad0(c), Namespace(c, "default")
				s.limits, s.json = c.StringSlice("limit"), c.Bool(FlagJSON)
				return s.err
			}}}}
	err := app.Run(append([]string{"t"}, args...))
	return s, err
}

// Nomad0 is the address Nomad would be called at.
func Nomad0(c *cli.Context) string { return address(c) }

func TestArgsInterspersed(t *testing.T) {
	s, err := run("cmd", "ns", "gpu=8", "-limit", "gpu=16", "--json", "-limit=memory=1TiB", "npu=8", "--", "-x")
	must.NoError(t, err)
	must.Eq(t, []string{"ns", "gpu=8", "npu=8", "-x"}, s.args)
	must.Eq(t, []string{"gpu=16", "memory=1TiB"}, s.limits)
	must.True(t, s.json)
}

func TestArgsErrors(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"unknown flag":  {args: []string{"cmd", "ns", "-bogus"}, want: "unknown flag -bogus"},
		"missing value": {args: []string{"cmd", "ns", "-limit"}, want: "flag -limit needs a value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := run(tc.args...)
			must.ErrorContains(t, err, tc.want)
			var ec cli.ExitCoder
			must.True(t, errors.As(err, &ec))
			must.Eq(t, ExitUsage, ec.ExitCode())
		})
	}
}

func TestFlagPrecedence(t *testing.T) {
	tests := map[string]struct {
		env     string
		args    []string
		address string
	}{
		"default":                {args: []string{"cmd"}, address: DefaultAddress},
		"empty env is default":   {env: "", args: []string{"cmd", "-namespace", "x"}, address: DefaultAddress},
		"environment":            {env: "http://env:1", args: []string{"cmd"}, address: "http://env:1"},
		"global beats env":       {env: "http://env:1", args: []string{"-address", "http://global:2", "cmd"}, address: "http://global:2"},
		"command beats global":   {env: "http://env:1", args: []string{"-address", "http://global:2", "cmd", "-address", "http://cmd:3"}, address: "http://cmd:3"},
		"command after argument": {args: []string{"cmd", "x", "-address", "http://cmd:3"}, address: "http://cmd:3"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv("NOMAD_ADDR", tc.env)
			if tc.env == "" {
				must.NoError(t, os.Unsetenv("NOMAD_ADDR"))
			}
			s, err := run(tc.args...)
			must.NoError(t, err)
			must.Eq(t, tc.address, s.address)
		})
	}
}

func TestNamespaceFromEnv(t *testing.T) {
	t.Setenv("NOMAD_NAMESPACE", "ml-research")
	s, err := run("cmd")
	must.NoError(t, err)
	must.Eq(t, "ml-research", s.namespace)
}

func TestTableAndKV(t *testing.T) {
	var b bytes.Buffer
	must.NoError(t, Table(&b, []string{"Name", "Quota"}, [][]string{{"ml-research", "gpu=8"}, {"a", "-"}}))
	must.Eq(t, "Name         Quota\nml-research  gpu=8\na            -\n", b.String())
	b.Reset()
	must.NoError(t, KVList(&b, []KV{{"Name", "x"}, {"Default Class", "standard"}}))
	must.Eq(t, "Name          = x\nDefault Class = standard\n", b.String())
}

func TestWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	must.Eq(t, "3m12s", Wait(now, now.Add(-192*time.Second-300*time.Millisecond)))
	must.Eq(t, "-", Wait(now, time.Time{}))
	must.Eq(t, "0s", Wait(now, now.Add(time.Minute)))
}
