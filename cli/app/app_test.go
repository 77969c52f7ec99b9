package app

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/shoenig/test/must"
)

// run runs allotctl in-process and returns its exit code and output.
func run(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Run(context.Background(), append([]string{"allotctl"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// refused is a loopback address nothing listens on.
const refused = "http://127.0.0.1:1"

func TestRunExitCodesAndErrors(t *testing.T) {
	tests := map[string]struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		"help":                    {args: []string{"--help"}, stdout: "quota"},
		"completion bash":         {args: []string{"completion", "bash"}, stdout: "complete -o bashdefault -o default -F _allotctl_complete allotctl"},
		"completion zsh":          {args: []string{"completion", "zsh"}, stdout: "bashcompinit"},
		"completion needs shell":  {args: []string{"completion", "fish"}, code: 2, stderr: "completion needs a shell"},
		"quota set without args":  {args: []string{"quota", "set"}, code: 2, stderr: "quota set needs a namespace"},
		"quota set without edits": {args: []string{"quota", "set", "ns"}, code: 2, stderr: "needs at least one resource=amount"},
		"unknown resource before any request": {args: []string{"quota", "set", "-address", refused, "ns", "tpu=4"},
			code: 1, stderr: `unknown resource "tpu"`},
		"negative quota before any request": {args: []string{"quota", "set", "ns", "gpu=-1", "-address", refused},
			code: 1, stderr: "allot.quota.gpu: bad amount"},
		"bad limit": {args: []string{"quota", "set", "ns", "gpu=1", "-limit", "gpu", "-address", refused},
			code: 1, stderr: "want resource=amount"},
		"unknown flag after args": {args: []string{"quota", "get", "ns", "-bogus"}, code: 2, stderr: "unknown flag -bogus"},
		"apply needs a file":      {args: []string{"quota", "apply"}, code: 1, stderr: `Required flag "file" not set`},
		"apply missing file":      {args: []string{"quota", "apply", "-f", "/nonexistent/tenants.hcl"}, code: 1, stderr: "reading /nonexistent/tenants.hcl"},
		"governor unreachable":    {args: []string{"queue", "-address", refused}, code: 1, stderr: "reading the queue from the governor at " + refused},
		"nomad unreachable":       {args: []string{"quota", "get", "ns", "-address", refused}, code: 1, stderr: `reading namespace "ns"`},
		"why needs an id":         {args: []string{"job", "why"}, code: 2, stderr: "job why needs exactly one job ID"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := run(tc.args...)
			must.Eq(t, tc.code, code, must.Sprintf("stdout: %s\nstderr: %s", out, errOut))
			must.StrContains(t, out, tc.stdout)
			must.StrContains(t, errOut, tc.stderr)
		})
	}
}

func TestBashCompletion(t *testing.T) {
	tests := map[string]struct {
		args []string
		want []string
	}{
		"nouns":        {args: []string{"--generate-bash-completion"}, want: []string{"tenant", "quota", "queue", "job", "dev", "completion"}},
		"quota":        {args: []string{"quota", "--generate-bash-completion"}, want: []string{"set", "get", "unset", "apply"}},
		"tenant":       {args: []string{"tenant", "--generate-bash-completion"}, want: []string{"list", "status"}},
		"shells":       {args: []string{"completion", "--generate-bash-completion"}, want: []string{"bash", "zsh"}},
		"flags of set": {args: []string{"quota", "set", "-", "--generate-bash-completion"}, want: []string{"--limit", "--cohort", "--weight"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// urfave/cli reads os.Args to tell flag completion from word
			// completion, as in a real shell invocation.
			args := append([]string{"-address", refused}, tc.args...)
			saved := os.Args
			os.Args = append([]string{"allotctl"}, args...)
			t.Cleanup(func() { os.Args = saved })
			code, out, errOut := run(args...)
			must.Zero(t, code, must.Sprint(errOut))
			for _, w := range tc.want {
				must.StrContains(t, out, w)
			}
		})
	}
}
