//go:build simgrid

package report

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/sim"
	"github.com/allot-sh/allot/governor/sim/fleet"
	"github.com/allot-sh/allot/governor/sim/workload"
)

// gangGPUs is the largest job that fits one node of the standard fleet:
// larger jobs are multi-node gangs.
const gangGPUs = 8

// TestGangs measures, per job, whether the standard fleet's lowest tenant
// under allot is below its entitlement because of its multi-node gangs
// (docs/simulator.md, "Findings under contention"): for each row it
// prints every tenant's received ÷ entitled and its queue waits by job
// size (jobs of at most 8 GPUs and multi-node gangs; jobs that never
// started count up to the end of the run), then runs the same workload
// without the lowest tenant's gangs (everything else unchanged) and
// prints received ÷ entitled again. Run from the repository root:
//
//	GOMAXPROCS=1 go test -tags simgrid -run '^TestGangs$' -v -timeout 30m ./governor/sim/report/
func TestGangs(t *testing.T) {
	spec, err := fleet.Load("../scenarios/standard.hcl")
	must.NoError(t, err)
	for _, load := range []float64{1.2, 1.5, 2.0} {
		const seed = 2
		sc, err := sim.GenerateWith(spec, sim.StandardWeek(seed, load))
		must.NoError(t, err)
		opts := sim.DefaultOptions()
		opts.Seed = seed
		r, err := sim.Run(sc.Spec, sc.Jobs, sim.Allot, opts)
		must.NoError(t, err)
		sum := sim.Summarize(r)
		low := lowestTenant(sum)
		fmt.Printf("\nstandard load %.1f seed %d, allot: useful %.1f %%, share error %.3f, lowest tenant %s\n",
			load, seed, 100*sum.UsefulRate, sum.ShareError, low)
		fmt.Println("| tenant | received ÷ entitled | jobs ≤ 8 GPUs: n / mean / p95 wait (h) | gangs > 8 GPUs: n / mean / p95 wait (h) | gangs' share of the tenant's GPU-hours waited |")
		fmt.Println("|---|---:|---|---|---:|")
		for _, sh := range sum.Shares {
			small, gang := waitsBySize(r, sh.Tenant)
			fmt.Printf("| %s | %.2f | %s | %s | %.0f %% |\n", sh.Tenant, sh.Received/sh.Entitled,
				statsCell(small.waits), statsCell(gang.waits), 100*gang.gpuHours/(small.gpuHours+gang.gpuHours))
		}

		var kept []*workload.Job
		for _, j := range sc.Jobs {
			if j.Tenant != low || j.GPUs() <= gangGPUs {
				kept = append(kept, j)
			}
		}
		must.Less(t, len(sc.Jobs), len(kept), must.Sprint("the lowest tenant ", low, " has gangs"))
		r2, err := sim.Run(sc.Spec, kept, sim.Allot, opts)
		must.NoError(t, err)
		sum2 := sim.Summarize(r2)
		var cells []string
		for _, sh := range sum2.Shares {
			cells = append(cells, fmt.Sprintf("%s %.2f", sh.Tenant, sh.Received/sh.Entitled))
		}
		fmt.Printf("without %s's %d gangs: useful %.1f %%, share error %.3f, received ÷ entitled: %s\n",
			low, len(sc.Jobs)-len(kept), 100*sum2.UsefulRate, sum2.ShareError, strings.Join(cells, ", "))
	}
}

// sizeWaits collects the waits of one tenant's jobs of one size class
// and the GPU-hours they waited (GPUs × wait).
type sizeWaits struct {
	waits    []time.Duration
	gpuHours float64
}

// waitsBySize splits tenant's queue waits into jobs that fit one node
// and multi-node gangs; a job that never started waited until r.End.
func waitsBySize(r *sim.Result, tenant string) (small, gang sizeWaits) {
	for i := range r.Jobs {
		j := &r.Jobs[i]
		if j.Tenant != tenant {
			continue
		}
		w, ok := j.Wait()
		if !ok {
			w = r.End - j.Submit
		}
		into := &small
		if j.GPUs > gangGPUs {
			into = &gang
		}
		into.waits = append(into.waits, w)
		into.gpuHours += float64(j.GPUs) * w.Hours()
	}
	return small, gang
}

func statsCell(ws []time.Duration) string {
	s := sim.NewStats(ws)
	return fmt.Sprintf("%d / %.2f / %.2f", s.N, s.Mean.Hours(), s.P95.Hours())
}

// lowestTenant names the tenant with the lowest received ÷ entitled.
func lowestTenant(s sim.Summary) string {
	sh := append([]sim.TenantShare(nil), s.Shares...)
	sort.Slice(sh, func(a, b int) bool { return sh[a].Received/sh[a].Entitled < sh[b].Received/sh[b].Entitled })
	return sh[0].Tenant
}
