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

// TestSweep runs a small load sweep: one row per load and policy, the
// idle column and three charts.
func TestSweep(t *testing.T) {
	spec, err := fleet.Load("../testdata/small.hcl")
	must.NoError(t, err)
	cfg := Config{Seed: 2, Jobs: 200, Span: 12 * time.Hour, SweepLoads: []float64{0.8, 1.6}}
	pts, err := Sweep(cfg, spec, func(string, ...any) {})
	must.NoError(t, err)
	must.SliceLen(t, 2, pts)
	var b bytes.Buffer
	SweepTable(&b, pts)
	out := b.String()
	for _, want := range []string{"| 0.8 | nomad-fifo |", "| 1.6 | allot |", "idle while waiting"} {
		must.StrContains(t, out, want)
	}
	names, err := SweepPlots(t.TempDir(), pts)
	must.NoError(t, err)
	must.SliceLen(t, 3, names)
	must.StrContains(t, IdleTableString(t, pts), "fragmentation")
}

// IdleTableString renders the idle table of a run at the sweep's last
// load (IdleTable needs runs: rebuilt from the summaries).
func IdleTableString(t *testing.T, pts []SweepPoint) string {
	t.Helper()
	var runs []Run
	for _, s := range pts[len(pts)-1].Summaries {
		runs = append(runs, Run{Summary: s, Result: &sim.Result{GPUs: pts[0].GPUs}})
	}
	var b bytes.Buffer
	IdleTable(&b, runs)
	return b.String()
}
