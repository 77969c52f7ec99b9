package layers

import (
	"strings"
	"testing"

	"github.com/allot-sh/allot/internal/repo"
	"github.com/shoenig/test/must"
)

// TestRepository checks the whole module against Rules, for the plain and
// the e2e build. It is the import-boundary step of `make check`.
func TestRepository(t *testing.T) {
	root, err := repo.Root()
	must.NoError(t, err)
	for _, tags := range []string{"", "e2e"} {
		t.Run("tags="+tags, func(t *testing.T) {
			pkgs, err := Load(root, tags)
			must.NoError(t, err)
			must.Greater(t, 10, len(pkgs), must.Sprint("go list found too few packages"))
			var lines []string
			for _, v := range Check(Rules, pkgs) {
				lines = append(lines, v.String())
			}
			must.SliceEmpty(t, lines, must.Sprint("import boundaries broken (rules: internal/layers/rules.go):\n"+strings.Join(lines, "\n")))
		})
	}
}

// TestCheck plants one violation of each kind of rule and expects the check
// to name it, and allows what the rules allow.
func TestCheck(t *testing.T) {
	cases := map[string]struct {
		pkg  Package
		want string // the forbidden import, "" when none
	}{
		"engine imports cluster":    {pkg: pkgOf("governor/engine", "governor/quota", "governor/cluster"), want: "governor/cluster"},
		"engine imports quota":      {pkg: pkgOf("governor/engine", "governor/quota")},
		"governor imports driver":   {pkg: pkgOf("governor/cluster", "task-driver/ckpt"), want: "task-driver/ckpt"},
		"governor imports contract": {pkg: pkgOf("governor/cluster", "contract/ckptevent")},
		"driver imports governor":   {pkg: pkgOf("task-driver/ckpt", "governor/jobmeta"), want: "governor/jobmeta"},
		"plugin imports driver":     {pkg: pkgOf("device-plugin/accel", "task-driver/ckpt"), want: "task-driver/ckpt"},
		"cli imports engine":        {pkg: pkgOf("cli/queue", "governor/engine"), want: "governor/engine"},
		"cli imports api client":    {pkg: pkgOf("cli/queue", "governor/allotapi", "cli/internal/cmdutil")},
		"sim imports wiring":        {pkg: pkgOf("governor/sim", "governor/agent"), want: "governor/agent"},
		"code imports test harness": {pkg: pkgOf("governor/server", "internal/testcluster"), want: "internal/testcluster"},
		"leaf imports anything":     {pkg: pkgOf("governor/jobmeta", "governor/quota"), want: "governor/quota"},
		"uncovered package":         {pkg: pkgOf("newpart/x"), want: "(any)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Check(Rules, []Package{tc.pkg})
			if tc.want == "" {
				must.SliceEmpty(t, got)
				return
			}
			must.SliceLen(t, 1, got)
			must.Eq(t, tc.want, got[0].Import)
		})
	}
}

func TestMatch(t *testing.T) {
	cases := map[string]struct {
		pattern, path string
		want          bool
	}{
		"exact":            {"governor/quota", "governor/quota", true},
		"exact other":      {"governor/quota", "governor/quotas", false},
		"tree itself":      {"governor/...", "governor", true},
		"tree child":       {"governor/...", "governor/engine", true},
		"tree prefix only": {"governor/...", "governorx", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.Eq(t, tc.want, match(tc.pattern, tc.path))
		})
	}
}

func TestDecode(t *testing.T) {
	in := `{"ImportPath":"github.com/allot-sh/allot/governor/engine","Imports":["fmt","github.com/allot-sh/allot/governor/quota"]}
{"ImportPath":"github.com/allot-sh/allot","Imports":["github.com/hashicorp/nomad/api"]}`
	got, err := decode(strings.NewReader(in))
	must.NoError(t, err)
	must.Eq(t, []Package{{Path: "governor/engine", Imports: []string{"governor/quota"}}, {Path: ""}}, got)

	_, err = decode(strings.NewReader(`{"ImportPath":"x","Error":{"Err":"no Go files"}}`))
	must.ErrorContains(t, err, "no Go files")
}

func pkgOf(path string, imports ...string) Package {
	return Package{Path: path, Imports: imports}
}
