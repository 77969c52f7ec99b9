//go:build simgrid

package report

import (
	"fmt"
	"math"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/sim"
)

// reversalWindow is how soon a tenant taking back from the tenant that
// took from it counts as capacity going back and forth.
const reversalWindow = time.Hour

// TestPreemptionAnatomy splits a week's preemptions by what they cost
// and whether capacity went back and forth (docs/simulator.md, round
// 26): the GPU-hours each cause threw away, split by whether the victim
// had saved a checkpoint since it last started and whether it had been
// preempted before; the victims of another tenant's reclaim or fair
// share taken from a tenant whose own reclaim or fair share had taken
// from the preemptor's tenant within reversalWindow; and the reclaims of
// jobs preempted before, by how long they had run again. The GPU-hours
// must add up to the report's. Run from the repository root:
//
//	SIMGRID_ROWS=1.2:2,1.5:3 GOMAXPROCS=1 go test -tags simgrid -run '^TestPreemptionAnatomy$' -v -timeout 30m ./governor/sim/report/
//
// (standard scenario, load:seed pairs; default 1.2:2). ANATOMY_ORDER and
// ANATOMY_MAX_LOSS set queue_order and reclaim_max_loss (unset: the
// governor's defaults).
func TestPreemptionAnatomy(t *testing.T) {
	for _, row := range standardRows(t, "1.2:2") {
		opts := sim.DefaultOptions()
		opts.Seed = row.seed
		opts.Engine.QueueOrder = os.Getenv("ANATOMY_ORDER")
		if s := os.Getenv("ANATOMY_MAX_LOSS"); s != "" {
			d, err := time.ParseDuration(s)
			must.NoError(t, err)
			opts.Engine.ReclaimMaxLoss = d
			opts.Engine.Reclaim = engine.ReclaimWithBound(opts.Engine.Reclaim, false, d)
		}
		a := newAnatomy()
		opts.OnCycle = a.cycle
		r, err := sim.Run(row.sc.Spec, row.sc.Jobs, sim.Allot, opts)
		must.NoError(t, err)
		sum := sim.Summarize(r)
		must.Eq(t, sum.Preemptions, a.victims, must.Sprint("every requeue is a victim of a plan"))
		must.Less(t, 1, math.Abs(a.lostTotal()-sum.LostGPUHours),
			must.Sprintf("the victims' GPU-hours add up to the report's %.0f", sum.LostGPUHours))
		fmt.Printf("\nstandard load %.1f seed %d (queue_order %q, reclaim_max_loss %s): %d preemptions, %.0f GPU-h lost, share error %.3f\n",
			row.load, row.seed, opts.Engine.QueueOrder, opts.Engine.ReclaimMaxLoss, a.victims, sum.LostGPUHours, sum.ShareError)
		a.print()
	}
}

// anatomy accumulates a run's preemptions.
type anatomy struct {
	victims int
	// lost and count are by "cause | checkpointed since start | preempted before".
	lost  map[string]float64
	count map[string]int
	// took holds, per (preemptor's tenant, victim's tenant), when and by
	// which cause the last reclaim or fair share took from the victim's.
	took map[[2]string]taking
	// reversals counts, by "earlier cause → this cause", the victims of
	// a reclaim or fair share taken within reversalWindow of the victim's
	// tenant taking from the preemptor's; crossTenant all such victims.
	reversals   map[string]int
	crossTenant int
	// again and againLost hold the reclaims of jobs preempted before, by
	// the time they had run since admitted again.
	again     map[string]int
	againLost map[string]float64
	preempted map[string]int
}

type taking struct {
	at    time.Time
	cause string
}

func newAnatomy() *anatomy {
	return &anatomy{lost: map[string]float64{}, count: map[string]int{}, took: map[[2]string]taking{},
		reversals: map[string]int{}, again: map[string]int{}, againLost: map[string]float64{}, preempted: map[string]int{}}
}

func (a *anatomy) cycle(snap *engine.Snapshot, plan *engine.Plan) {
	jobs := map[string]*engine.Job{}
	for _, j := range snap.Jobs {
		jobs[j.Key()] = j
	}
	for _, p := range plan.Preemptions {
		for _, v := range p.Victims {
			key := v.Namespace + "/" + v.JobID
			gpuH, saved := victimLoss(snap, v)
			before := a.preempted[key] > 0
			k := fmt.Sprintf("%-11s | checkpointed %-5v | preempted before %v", p.Cause, saved, before)
			a.lost[k] += gpuH
			a.count[k]++
			a.victims++
			if (p.Cause == engine.CauseReclaim || p.Cause == engine.CauseFairShare) && v.Namespace != p.Namespace {
				a.crossTenant++
				if back, ok := a.took[[2]string{v.Namespace, p.Namespace}]; ok && snap.Now.Sub(back.at) <= reversalWindow {
					a.reversals[back.cause+" → "+p.Cause]++
				}
				a.took[[2]string{p.Namespace, v.Namespace}] = taking{at: snap.Now, cause: p.Cause}
			}
			if p.Cause == engine.CauseReclaim && before {
				if j := jobs[key]; j != nil {
					b := ranFor(snap.Now.Sub(j.AdmittedAt))
					a.again[b]++
					a.againLost[b] += gpuH
				}
			}
			a.preempted[key]++
		}
	}
}

// victimLoss is the GPU-hours victim v throws away (each live
// allocation's time since its last checkpoint, or its start, times its
// devices) and whether any of its allocations checkpointed since it
// started.
func victimLoss(snap *engine.Snapshot, v engine.Victim) (float64, bool) {
	var gpuH float64
	saved := false
	for _, al := range snap.Allocs {
		if al.Namespace != v.Namespace || al.JobID != v.JobID || !al.Live {
			continue
		}
		from := al.StartedAt
		if al.LastCheckpoint.After(from) {
			from, saved = al.LastCheckpoint, true
		}
		n := 0
		for _, d := range al.Devices {
			n += d
		}
		if snap.Now.After(from) {
			gpuH += snap.Now.Sub(from).Hours() * float64(n)
		}
	}
	return gpuH, saved
}

// ranFor buckets how long a job ran.
func ranFor(d time.Duration) string {
	switch {
	case d <= 30*time.Minute:
		return "≤ 30 min"
	case d <= 2*time.Hour:
		return "≤ 2 h"
	case d <= 6*time.Hour:
		return "≤ 6 h"
	}
	return "> 6 h"
}

func (a *anatomy) lostTotal() float64 {
	var s float64
	for _, v := range a.lost {
		s += v
	}
	return s
}

func (a *anatomy) print() {
	fmt.Println("GPU-h lost by cause | victim checkpointed since its start | preempted before:")
	for _, k := range sortedKeys(a.count) {
		fmt.Printf("  %-62s %5d victims %8.0f GPU-h\n", k, a.count[k], a.lost[k])
	}
	n := 0
	for _, c := range a.reversals {
		n += c
	}
	fmt.Printf("reclaim and fair-share victims: %d; taken within %s of their tenant taking from the preemptor's: %d\n", a.crossTenant, reversalWindow, n)
	for _, k := range sortedKeys(a.reversals) {
		fmt.Printf("  %-26s %5d\n", k, a.reversals[k])
	}
	fmt.Println("reclaims of jobs preempted before, by how long they had run again:")
	for _, k := range sortedKeys(a.again) {
		fmt.Printf("  %-10s %5d victims %8.0f GPU-h\n", k, a.again[k], a.againLost[k])
	}
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
