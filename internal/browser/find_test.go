package browser

import (
	"errors"
	"os/exec"
	"testing"

	"github.com/shoenig/test/must"
)

func TestFind(t *testing.T) {
	installed := map[string]string{"chromium-browser": "/opt/bin/chromium-browser", "/custom/chrome": "/custom/chrome"}
	look := func(name string) (string, error) {
		if p, ok := installed[name]; ok {
			return p, nil
		}
		return "", exec.ErrNotFound
	}
	cases := map[string]struct {
		env        string
		candidates []string
		want       string
		wantErr    bool
	}{
		"first candidate found":                {candidates: []string{"/usr/bin/chromium", "chromium-browser", "google-chrome"}, want: "/opt/bin/chromium-browser"},
		"env wins":                             {env: "/custom/chrome", candidates: []string{"chromium-browser"}, want: "/custom/chrome"},
		"env missing is an error, no fallback": {env: "/nope/chrome", candidates: []string{"chromium-browser"}, wantErr: true},
		"none installed":                       {candidates: []string{"/usr/bin/chromium", "google-chrome"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := find(tc.env, tc.candidates, look)
			if tc.wantErr {
				must.Error(t, err)
				must.True(t, errors.Is(err, ErrNotFound))
				must.StrContains(t, err.Error(), "apt-get install -y chromium")
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}
