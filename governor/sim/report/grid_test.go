//go:build simgrid

package report

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/sim"
	"github.com/allot-sh/allot/governor/sim/fleet"
)

// gridCase is one row of the issue-14 measurement grid.
type gridCase struct {
	hetero bool
	load   float64
	seed   int64
}

// gridCases is the issue-14 grid: standard scenario at loads 1.2, 1.5 and
// 2.0 with seeds 1-3, the heterogeneous fleet, and load 0.9 (no worse
// than before). SIMGRID=std,het,low picks parts; SIMGRID_SEEDS=1,2 seeds.
func gridCases() []gridCase {
	parts := os.Getenv("SIMGRID")
	if parts == "" {
		parts = "std,het,low"
	}
	seeds := []int64{1, 2, 3}
	if s := os.Getenv("SIMGRID_SEEDS"); s != "" {
		seeds = nil
		for _, f := range strings.Split(s, ",") {
			n, _ := strconv.ParseInt(f, 10, 64)
			seeds = append(seeds, n)
		}
	}
	var out []gridCase
	for _, p := range strings.Split(parts, ",") {
		switch p {
		case "std":
			for _, l := range []float64{1.2, 1.5, 2.0} {
				for _, s := range seeds {
					out = append(out, gridCase{load: l, seed: s})
				}
			}
		case "het":
			for _, c := range [][2]float64{{1.2, 1}, {1.5, 1}, {1.5, 2}, {1.5, 3}, {2.0, 1}} {
				if containsSeed(seeds, int64(c[1])) {
					out = append(out, gridCase{hetero: true, load: c[0], seed: int64(c[1])})
				}
			}
		case "low":
			for _, s := range seeds {
				out = append(out, gridCase{load: 0.9, seed: s})
			}
		}
	}
	return out
}

func containsSeed(seeds []int64, s int64) bool {
	for _, x := range seeds {
		if x == s {
			return true
		}
	}
	return false
}

// TestGrid prints, per case, the four issue-14 metrics of allot and
// nomad-fifo and the idle causes (run from the repository root's
// governor/sim/report: the cluster files are found relative to it).
//
//	GOMAXPROCS=1 go test -tags simgrid -run '^TestGrid$' -v -timeout 60m ./governor/sim/report/
func TestGrid(t *testing.T) {
	fmt.Println("| scenario | load | seed | useful allot / fifo (Δ); net of work lost allot (Δ) | share error allot (fifo); idle floor / among allocated, allot (fifo) | lowest recv÷ent allot (fifo); of allocated | p95 within nominal allot / fifo (h) | GPU-h lost | idle allot: limits/resv/hold/frag/cycle/backoff (fifo frag/gang) |")
	fmt.Println("|---|---:|---:|---:|---|---:|---:|---:|---|")
	for _, c := range gridCases() {
		file, name := "../scenarios/standard.hcl", "standard"
		p := sim.StandardWeek(c.seed, c.load)
		if c.hetero {
			file, name = "../scenarios/hetero.hcl", "heterogeneous"
			p = sim.HeteroWeek(c.seed, c.load)
		}
		spec, err := fleet.Load(file)
		must.NoError(t, err)
		sc, err := sim.GenerateWith(spec, p)
		must.NoError(t, err)
		opts := sim.DefaultOptions()
		opts.Seed = c.seed
		by := map[sim.Policy]sim.Summary{}
		for _, pol := range []sim.Policy{sim.NomadFIFO, sim.Allot} {
			r, err := sim.Run(sc.Spec, sc.Jobs, pol, opts)
			must.NoError(t, err)
			by[pol] = sim.Summarize(r)
		}
		a, f := by[sim.Allot], by[sim.NomadFIFO]
		span := a.Span.Hours() * float64(spec.GPUs()) / 100
		idle := func(s sim.Summary, c sim.IdleCause) string {
			return fmt.Sprintf("%.1f", s.IdleWhileWaiting[c.String()]/span)
		}
		p95 := "—"
		if a.WaitWithinNominal.N > 0 {
			p95 = fmt.Sprintf("%.2f / %.2f", a.WaitWithinNominal.P95.Hours(), f.WaitWithinNominal.P95.Hours())
		}
		fmt.Printf("| %s | %.1f | %d | %.1f / %.1f (%+.1f); %.1f (%+.1f) | %.3f (%.3f); %.3f / %.3f (%.3f / %.3f) | %s (%s); %s | %s | %.0f | %s/%s/%s/%s/%s/%s (%s/%s) |\n",
			name, c.load, c.seed, 100*a.UsefulRate, 100*f.UsefulRate, 100*(a.UsefulRate-f.UsefulRate), 100*a.NetUsefulRate, 100*(a.NetUsefulRate-f.NetUsefulRate),
			a.ShareError, f.ShareError, a.ShareErrorIdle, a.ShareErrorAllocated, f.ShareErrorIdle, f.ShareErrorAllocated, lowest(a), lowest(f), lowestAllocated(a), p95, a.LostGPUHours,
			idle(a, sim.IdleLimits), idle(a, sim.IdleReservation), idle(a, sim.IdleHold), idle(a, sim.IdleFragmentation), idle(a, sim.IdleCycle), idle(a, sim.IdleChurn),
			idle(f, sim.IdleFragmentation), idle(f, sim.IdleGang))
	}
}

// lowest names the tenant with the lowest received ÷ entitled ratio.
func lowest(s sim.Summary) string {
	sh := append([]sim.TenantShare(nil), s.Shares...)
	sort.Slice(sh, func(a, b int) bool { return sh[a].Received/sh[a].Entitled < sh[b].Received/sh[b].Entitled })
	if len(sh) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f %s", sh[0].Received/sh[0].Entitled, sh[0].Tenant)
}

// lowestAllocated is lowest against the division of the allocated GPUs.
func lowestAllocated(s sim.Summary) string {
	sh := append([]sim.TenantShare(nil), s.Shares...)
	for i := range sh {
		sh[i].Entitled = sh[i].EntitledAllocated
	}
	s.Shares = sh
	return lowest(s)
}
