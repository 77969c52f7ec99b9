package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "governor.hcl")
	must.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func noEnv(string) string { return "" }

// settingCase is a config file and the value one setting must then
// have, or what the error loading it must contain.
type settingCase[T any] struct {
	file    string
	want    T
	wantErr string
}

// checkSetting loads each case's file and checks the setting as read
// (got) and, when inEngine is not nil, as the engine decides with it.
func checkSetting[T any](t *testing.T, cases map[string]settingCase[T], got func(Config) T, inEngine func(engine.Config) T) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := loadFile(t, tc.file, tc.wantErr)
			if c == nil {
				return
			}
			must.Eq(t, tc.want, got(*c))
			if inEngine != nil {
				must.Eq(t, tc.want, inEngine(c.Engine()), must.Sprint("the engine decides with it"))
			}
		})
	}
}

// loadFile loads a config file with body. With wantErr set it asserts
// that Load fails with it and returns nil; otherwise that Load succeeds.
func loadFile(t *testing.T, body, wantErr string) *Config {
	t.Helper()
	c, err := Load([]string{"-config", writeFile(t, body)}, noEnv, io.Discard)
	if wantErr != "" {
		must.ErrorContains(t, err, wantErr)
		return nil
	}
	must.NoError(t, err)
	return &c
}

func TestDefaults(t *testing.T) {
	c, err := Load(nil, noEnv, io.Discard)
	must.NoError(t, err)
	must.Eq(t, "127.0.0.1:4680", c.Listen)
	must.Eq(t, "http://127.0.0.1:4646", c.Nomad.Address)
	must.Eq(t, Class{Priority: 90, Restricted: true}, c.Classes["production"])
	must.Eq(t, Class{Priority: 10, Preemptible: true}, c.Classes["best-effort"])
	must.Eq(t, []string{"best-effort", "high", "low", "production", "standard"}, c.ClassNames())
	must.Eq(t, 10*time.Minute, c.StarvationTimeout)
	must.Eq(t, 30*time.Second, c.BackoffBase)
	must.Eq(t, 10*time.Minute, c.BackoffCap)
	must.False(t, c.DisablePreemption)
	must.True(t, c.GovernsNamespace("anything"))
}

func TestFileAndFlags(t *testing.T) {
	p := writeFile(t, `
listen = "127.0.0.1:9999"
governed_namespaces = ["ml-*"]
starvation_timeout = "2m"
backoff_base = "5s"
backoff_cap = "1m"
gang_timeout = "90s"
disable_preemption = true
nomad {
  address = "http://127.0.0.1:1111"
  token   = "file-token"
}
class "urgent" {
  priority   = 80
  restricted = true
}
`)
	env := func(k string) string {
		return map[string]string{"NOMAD_TOKEN": "env-token", "NOMAD_ADDR": "http://127.0.0.1:2222"}[k]
	}
	c, err := Load([]string{"-config", p, "-nomad-addr", "http://127.0.0.1:3333"}, env, io.Discard)
	must.NoError(t, err)
	must.Eq(t, "127.0.0.1:9999", c.Listen)
	must.Eq(t, "http://127.0.0.1:3333", c.Nomad.Address, must.Sprint("flag wins over file and env"))
	must.Eq(t, "file-token", c.Nomad.Token, must.Sprint("file wins over env"))
	must.Eq(t, 2*time.Minute, c.StarvationTimeout)
	must.Eq(t, 5*time.Second, c.BackoffBase)
	must.Eq(t, time.Minute, c.BackoffCap)
	must.Eq(t, 90*time.Second, c.GangTimeout)
	must.True(t, c.DisablePreemption)
	must.Eq(t, Class{Priority: 80, Preemptible: true, Restricted: true}, c.Classes["urgent"])
	must.True(t, c.GovernsNamespace("ml-research"))
	must.False(t, c.GovernsNamespace("default"))
}

func TestErrorsReportedAtOnce(t *testing.T) {
	cases := map[string]struct {
		file string
		args []string
		want []string
	}{
		"every bad value": {
			file: `
listen = "nowhere"
starvation_timeout = "soon"
gang_timeout = "-1s"
governed_namespaces = ["[bad"]
nomad { address = "127.0.0.1:4646" }
class "standard" { priority = 0 }
`,
			want: []string{"starvation_timeout", "soon"},
		},
		"validation after load": {
			file: `
listen = "nowhere"
gang_timeout = "-1s"
governed_namespaces = ["[bad"]
nomad { address = "127.0.0.1:4646" }
class "standard" { priority = 0 }
`,
			want: []string{`listen "nowhere"`, "gang_timeout must be positive", `pattern "[bad"`,
				"must be an http(s) URL", `class "standard": priority 0`},
		},
		"back-off cap below its base": {
			file: "backoff_base = \"2m\"\nbackoff_cap = \"1m\"\n",
			want: []string{"backoff_cap 1m0s must not be below backoff_base 2m0s"},
		},
		"unknown attribute": {file: `colour = "blue"`, want: []string{"colour"}},
		"governor pointing at itself": {
			args: []string{"-nomad-addr", "http://127.0.0.1:4680"},
			want: []string{"own listen address"},
		},
		"stray argument": {args: []string{"extra"}, want: []string{"unexpected arguments"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"-config", writeFile(t, tc.file)}, args...)
			}
			_, err := Load(args, noEnv, io.Discard)
			must.Error(t, err)
			for _, w := range tc.want {
				must.StrContains(t, err.Error(), w)
			}
		})
	}
}

// The self-address check has one home in Validate: its error appears once.
func TestSelfAddressReportedOnce(t *testing.T) {
	_, err := Load([]string{"-nomad-addr", "http://127.0.0.1:4680"}, noEnv, io.Discard)
	must.Error(t, err)
	must.Eq(t, 1, strings.Count(err.Error(), "own listen address"), must.Sprint(err.Error()))
}
