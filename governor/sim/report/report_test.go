package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/sim"
	"github.com/allot-sh/allot/governor/sim/fleet"
)

func TestReplaceSection(t *testing.T) {
	cases := map[string]struct{ doc, want string }{
		"appended to an empty file": {"", "## Simulator\n\nnew\n"},
		"appended after others":     {"# B\n\n## Other\n\nx\n", "# B\n\n## Other\n\nx\n\n## Simulator\n\nnew\n"},
		"replaced in the middle":    {"## A\n\na\n\n## Simulator\n\nold\nold\n\n## C\n\nc\n", "## A\n\na\n\n## Simulator\n\nnew\n\n## C\n\nc\n"},
		"replaced at the end":       {"## A\n\na\n\n## Simulator\n\nold\n", "## A\n\na\n\n## Simulator\n\nnew\n"},
		"subsections are replaced":  {"## Simulator\n\n### x\n\nold\n## D\n", "## Simulator\n\nnew\n\n## D\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.EqOp(t, tc.want, string(ReplaceSection([]byte(tc.doc), "Simulator", []byte("new\n"))))
		})
	}
}

func TestReportFromARun(t *testing.T) {
	spec, err := fleet.Load("../testdata/small.hcl")
	must.NoError(t, err)
	sc, err := sim.Generate(spec, 2, 300, 24*time.Hour, 1.1)
	must.NoError(t, err)
	runs, err := Compare(sc, sim.DefaultOptions())
	must.NoError(t, err)
	must.SliceLen(t, 3, runs)
	var b bytes.Buffer
	Tables(&b, runs)
	out := b.String()
	for _, want := range []string{"| nomad-fifo |", "| allot |", "Queue wait by tenant", "Queue wait by class", "| a | 26 |"} {
		must.StrContains(t, out, want)
	}
	v := Verdict(runs)
	must.StrContains(t, v, "share-vs-entitlement error")
	dir := t.TempDir()
	names, err := Plots(dir, runs)
	must.NoError(t, err)
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, n))
		must.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		must.NoError(t, err)
		must.EqOp(t, width, img.Bounds().Dx())
		// Something besides the white background was drawn.
		colours := map[uint32]bool{}
		for x := 0; x < width; x += 3 {
			for y := 0; y < height; y += 3 {
				r, g, bl, _ := img.At(x, y).RGBA()
				colours[r<<16|g<<8|bl] = true
			}
		}
		must.Greater(t, 3, len(colours), must.Sprint(n))
	}
	must.True(t, strings.Contains(Verdict(runs[:1]), "needs both"))
}
