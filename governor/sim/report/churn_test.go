//go:build simgrid

package report

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/sim"
)

// TestChurn measures how allot's preemptions spread over jobs
// (docs/simulator.md, round 12): per row, without and with the requeue
// rest (engine.Config.RequeueRest = 2m), the preemptions by cause, how
// many of them hit jobs preempted four times or more, and the most any
// one job was preempted. The rest must lower both the count and the
// most per job. Run from the repository root:
//
//	SIMGRID_ROWS=1.2:2 CHURN_STOP=2m GOMAXPROCS=1 go test -tags simgrid -run '^TestChurn$' -v -timeout 30m ./governor/sim/report/
//
// (standard scenario, load:seed pairs; default 1.2:2; CHURN_STOP sets
// sim.Options.StopDelay).
func TestChurn(t *testing.T) {
	var stop time.Duration
	if s := os.Getenv("CHURN_STOP"); s != "" {
		var err error
		stop, err = time.ParseDuration(s)
		must.NoError(t, err)
	}
	for _, row := range standardRows(t, "1.2:2") {
		var runs [2]churn
		for i, rest := range []time.Duration{0, 2 * time.Minute} {
			opts := sim.DefaultOptions()
			opts.Seed, opts.StopDelay, opts.Engine.RequeueRest = row.seed, stop, rest
			c := churn{causes: map[string]int{}, perJob: map[string]int{}}
			opts.OnCycle = c.cycle
			r, err := sim.Run(row.sc.Spec, row.sc.Jobs, sim.Allot, opts)
			must.NoError(t, err)
			sum := sim.Summarize(r)
			must.Eq(t, sum.Preemptions, c.total, must.Sprint("every requeue is a preemption of a plan"))
			fmt.Printf("\nstandard load %.1f seed %d, stop %s, requeue rest %s: %s, share error %.3f, GPU-h lost %.0f\n",
				row.load, row.seed, stop, rest, c.String(), sum.ShareError, sum.LostGPUHours)
			runs[i] = c
		}
		must.Less(t, runs[0].total, runs[1].total, must.Sprint("the rest lowers the preemptions"))
		must.Less(t, runs[0].most(), runs[1].most(), must.Sprint("and the most any one job suffers"))
	}
}

// churn counts a run's preemptions by cause and per victim.
type churn struct {
	total  int
	causes map[string]int
	perJob map[string]int
}

func (c *churn) cycle(_ *engine.Snapshot, plan *engine.Plan) {
	for _, p := range plan.Preemptions {
		c.causes[p.Cause] += len(p.Victims)
		c.total += len(p.Victims)
		for _, v := range p.Victims {
			c.perJob[v.Namespace+"/"+v.JobID]++
		}
	}
}

// most is the most preemptions any one job suffered.
func (c *churn) most() int {
	m := 0
	for _, n := range c.perJob {
		if n > m {
			m = n
		}
	}
	return m
}

func (c *churn) String() string {
	causes := make([]string, 0, len(c.causes))
	for k, n := range c.causes {
		causes = append(causes, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(causes)
	often := 0
	for _, n := range c.perJob {
		if n >= 4 {
			often += n
		}
	}
	share := 0.0
	if c.total > 0 {
		share = 100 * float64(often) / float64(c.total)
	}
	return fmt.Sprintf("%d preemptions (%s) of %d jobs; %d (%.0f %%) hit jobs preempted ≥ 4 times; most per job %d",
		c.total, strings.Join(causes, ", "), len(c.perJob), often, share, c.most())
}
