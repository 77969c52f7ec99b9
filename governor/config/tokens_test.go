package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
)

func TestSubmitterTokens(t *testing.T) {
	cases := map[string]struct {
		file string
		want string
		err  string
	}{
		"default":  {file: "", want: SubmitterTokensAuto},
		"required": {file: `submitter_tokens = "required"`, want: SubmitterTokensRequired},
		"none":     {file: `submitter_tokens = "none"`, want: SubmitterTokensNone},
		"auto":     {file: `submitter_tokens = "auto"`, want: SubmitterTokensAuto},
		"unknown":  {file: `submitter_tokens = "maybe"`, err: `submitter_tokens "maybe": must be "auto", "required" or "none"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "governor.hcl")
			must.NoError(t, os.WriteFile(path, []byte(tc.file+"\n"), 0o644))
			c := Default()
			must.NoError(t, c.LoadFile(path))
			err := c.Validate()
			if tc.err != "" {
				must.ErrorContains(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, c.SubmitterTokens)
		})
	}
}
