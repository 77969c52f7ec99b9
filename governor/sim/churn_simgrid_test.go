//go:build simgrid

package sim

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/shoenig/test/must"
)

// TestChurnScan lists what allot's preemptions on the grid's rows came
// to, the scan that found the defects of rounds 47 and 48
// (docs/simulator.md); report's TestChurn counts preemptions per cause
// and per job with and without the requeue rest, this one asks which of
// them were wasted:
//
//   - per cause, the victims, the GPU-hours of work they lost and the
//     GPU-hours they held;
//   - plans that took from tenant B for A and from A for B (the engine
//     forbids it: the test fails on one);
//   - take-backs: a plan taking from A for B within five minutes of one
//     that took from B for A (moves aside), by the two causes;
//   - victims whose preemptor started running more than 30 minutes after
//     the plan, or never within the week;
//   - victims that had themselves taken another tenant's jobs within
//     30 minutes, per cause of their preemption;
//   - the jobs requeued most.
//
// WATCH=ns/id also prints that job's verdict at every change of its
// state or first failing check (of its reason with WATCH_REASONS=1), and every
// preemption it is in. Rows and settings as TestShareErrorByCheck's, and
// SPLIT_STOPDELAY (a duration) the simulator's -stop-delay:
//
//	SIMGRID_ROWS=1.5:4 go test -tags simgrid -run '^TestChurnScan$' -v -timeout 30m ./governor/sim/
func TestChurnScan(t *testing.T) {
	for _, row := range simgridRows(t) {
		s := row.sim(t)
		c := newChurnScan(s, os.Getenv("WATCH"))
		s.opts.OnCycle = c.cycle
		s.onSettle = c.settle
		s.loop()
		fmt.Printf("\n%s load %.1f seed %d: share error %.4f\n", row.cluster, row.load, row.seed, Summarize(s.result()).ShareError)
		c.print()
		must.Zero(t, c.bothWays, must.Sprint("no plan may take capacity both ways between two tenants"))
	}
}

// takeBackWindow and lateStart are the scan's thresholds.
const (
	takeBackWindow = 5 * time.Minute
	lateStart      = 30 * time.Minute
)

// churnScan accumulates TestChurnScan's counts over one run.
type churnScan struct {
	s     *sim
	byKey map[string]*jobRun
	watch string
	// reasons: WATCH_REASONS is set.
	reasons bool
	// victims, lostGPUh and heldGPUh are per cause.
	victims            map[string]int
	lostGPUh, heldGPUh map[string]float64
	bothWays           int
	// took holds, per "b>a", when and why a plan last took from b for a
	// (moves aside); takeBacks counts the take-backs by their causes.
	took      map[string]take
	takeBacks map[string]int
	// waiting holds, per preemptor, when its earliest preemption still
	// waiting for it to run was planned, and how many victims it has.
	waiting map[string]waitingPreemptor
	delays  []time.Duration
	late    int
	lates   []string // the late preemptors, as printed
	// preempted holds, per job, when it last preempted another tenant's
	// job; preemptorsTaken counts, per cause, the victims that had within
	// lateStart, and victimsWasted the victims those had taken.
	preempted       map[string]time.Duration
	preemptorsTaken map[string]int
	tookFor         map[string]int
	victimsWasted   map[string]int
	// verdict is WATCH's latest state and first failing check.
	verdict string
}

type take struct {
	at    time.Duration
	cause string
}

type waitingPreemptor struct {
	since   time.Duration
	victims int
}

func newChurnScan(s *sim, watch string) *churnScan {
	c := &churnScan{s: s, byKey: map[string]*jobRun{}, watch: watch, reasons: os.Getenv("WATCH_REASONS") != "",
		victims: map[string]int{}, lostGPUh: map[string]float64{}, heldGPUh: map[string]float64{},
		took: map[string]take{}, takeBacks: map[string]int{}, waiting: map[string]waitingPreemptor{},
		preempted: map[string]time.Duration{}, preemptorsTaken: map[string]int{}, tookFor: map[string]int{}, victimsWasted: map[string]int{}}
	for _, j := range s.jobs {
		c.byKey[j.key()] = j
	}
	return c
}

// cycle records one plan's preemptions.
func (c *churnScan) cycle(_ *engine.Snapshot, p *engine.Plan) {
	now := c.s.now
	inPlan := map[string]string{} // "b>a": this plan took from b for a, for this cause
	for _, pr := range p.Preemptions {
		by := pr.Namespace + "/" + pr.JobID
		for _, v := range pr.Victims {
			c.victim(now, pr, v)
			if last, ok := c.preempted[v.Namespace+"/"+v.JobID]; ok && now-last <= lateStart {
				c.preemptorsTaken[pr.Cause]++
				c.victimsWasted[pr.Cause] += c.tookFor[v.Namespace+"/"+v.JobID]
			}
			if v.Namespace == pr.Namespace {
				continue
			}
			if last, ok := c.preempted[by]; !ok || now-last > lateStart {
				c.tookFor[by] = 0
			}
			c.preempted[by] = now
			c.tookFor[by]++
			if pr.Cause != engine.CauseMove && inPlan[pr.Namespace+">"+v.Namespace] != "" {
				c.bothWays++
				fmt.Printf("  %s both ways: %s took from %s for %s (%s) in a plan that took from %s\n", at(now), pr.Namespace, v.Namespace, by, pr.Cause, pr.Namespace)
			}
			if back, ok := c.took[pr.Namespace+">"+v.Namespace]; ok && now-back.at <= takeBackWindow && pr.Cause != engine.CauseMove {
				c.takeBacks[back.cause+", then "+pr.Cause]++
			}
			if pr.Cause != engine.CauseMove {
				inPlan[v.Namespace+">"+pr.Namespace] = pr.Cause
			}
		}
		if w, ok := c.waiting[by]; ok {
			w.victims += len(pr.Victims)
			c.waiting[by] = w
		} else {
			c.waiting[by] = waitingPreemptor{since: now, victims: len(pr.Victims)}
		}
		if by == c.watch || c.watchesVictim(pr) {
			fmt.Printf("  %s WATCH %s preempts %v for %s: %s\n", at(now), by, pr.Victims, pr.Cause, pr.Reason)
		}
	}
	for k, cause := range inPlan {
		c.took[k] = take{at: now, cause: cause}
	}
	if v := p.Verdicts[c.watch]; v != nil && c.verdictOf(v) != c.verdict {
		c.verdict = c.verdictOf(v)
		fmt.Printf("  %s WATCH %s %s: %s\n", at(now), c.watch, v.State, v.Reason)
	}
}

// verdictOf is what a change of WATCH's verdict is judged on: its
// state and first failing check, its whole reason with WATCH_REASONS set.
func (c *churnScan) verdictOf(v *engine.Verdict) string {
	if c.reasons {
		return v.Reason
	}
	return v.State.String() + checkName(v.Failed())
}

func (c *churnScan) watchesVictim(pr engine.Preemption) bool {
	for _, v := range pr.Victims {
		if v.Namespace+"/"+v.JobID == c.watch {
			return true
		}
	}
	return false
}

// victim counts one victim of pr under its cause.
func (c *churnScan) victim(now time.Duration, pr engine.Preemption, v engine.Victim) {
	gpus := 0.0
	if j := c.byKey[v.Namespace+"/"+v.JobID]; j != nil {
		for _, g := range j.w.Groups {
			gpus += float64(g.Count * g.GPUs)
		}
		c.heldGPUh[pr.Cause] += gpus * (now - j.admittedAt).Hours()
	}
	c.victims[pr.Cause]++
	c.lostGPUh[pr.Cause] += gpus * v.LostWork.Hours()
}

// settle notes the preemptors that run now.
func (c *churnScan) settle() {
	for key, w := range c.waiting {
		j := c.byKey[key]
		if j == nil || !j.running || j.runningSince < w.since {
			continue
		}
		d := c.s.now - w.since
		c.delays = append(c.delays, d)
		if d > lateStart {
			c.late += w.victims
			c.lates = append(c.lates, fmt.Sprintf("%s %s after %v (%d victims)", at(w.since), key, d.Round(time.Minute), w.victims))
		}
		delete(c.waiting, key)
	}
}

func (c *churnScan) print() {
	causes := make([]string, 0, len(c.victims))
	for cause := range c.victims {
		causes = append(causes, cause)
	}
	sort.Strings(causes)
	for _, cause := range causes {
		fmt.Printf("  %-12s %5d victims, %7.1f GPU-h of work lost, %8.1f GPU-h held since admission\n",
			cause, c.victims[cause], c.lostGPUh[cause], c.heldGPUh[cause])
	}
	for _, cause := range causes {
		if n := c.preemptorsTaken[cause]; n > 0 {
			fmt.Printf("  %-12s took %d jobs that had taken another tenant's within %v (%d victims between them)\n", cause, n, lateStart, c.victimsWasted[cause])
		}
	}
	fmt.Printf("  plans taking both ways %d; take-backs within %v:", c.bothWays, takeBackWindow)
	pairs := make([]string, 0, len(c.takeBacks))
	for pair := range c.takeBacks {
		pairs = append(pairs, pair)
	}
	sort.Strings(pairs)
	for _, pair := range pairs {
		fmt.Printf(" %s %d;", pair, c.takeBacks[pair])
	}
	fmt.Println()
	never := 0
	for _, w := range c.waiting {
		never += w.victims
	}
	st := NewStats(c.delays)
	fmt.Printf("  preemptors started: %d, median after %v, p95 after %v; victims of preemptors started > %v later: %d, never: %d (%d preemptors)\n",
		st.N, st.P50.Round(time.Second), st.P95.Round(time.Second), lateStart, c.late, never, len(c.waiting))
	if lates := c.lates; len(lates) > 0 {
		if len(lates) > 8 {
			lates = lates[:8]
		}
		fmt.Printf("  late preemptors (the first %d): %s\n", len(lates), strings.Join(lates, "; "))
	}
	fmt.Printf("  requeued most: %s\n", c.mostRequeued(5))
}

// mostRequeued names the n jobs requeued most.
func (c *churnScan) mostRequeued(n int) string {
	jobs := append([]*jobRun(nil), c.s.jobs...)
	sort.SliceStable(jobs, func(i, k int) bool { return jobs[i].requeues > jobs[k].requeues })
	var out []string
	for i, j := range jobs {
		if i < n && j.requeues > 0 {
			out = append(out, fmt.Sprintf("%s ×%d", j.key(), j.requeues))
		}
	}
	return strings.Join(out, ", ")
}

// at renders a simulation time as day and clock.
func at(d time.Duration) string {
	return fmt.Sprintf("d%d %s", int(d/(24*time.Hour)), epoch.Add(d%(24*time.Hour)).Format("15:04:05"))
}
