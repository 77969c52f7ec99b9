//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
)

var (
	fresh = []string{"a-fresh-1", "a-fresh-2"} // checkpoint every second
	stale = []string{"a-stale-1", "a-stale-2"} // never checkpoint on their own
)

// borrowAll has team-a (nominal 4) borrow all 8 GPUs with four low-class
// 2-GPU trainers and returns their allocations by job.
func (e *preemptEnv) borrowAll() map[string]string {
	e.t.Helper()
	for _, id := range fresh {
		e.train("team-a", id, "low", 1, 2, "-step-time", "100ms", "-save-every", "10")
	}
	for _, id := range stale {
		e.train("team-a", id, "low", 1, 2, "-step-time", "100ms")
	}
	old := map[string]string{}
	for _, id := range append(append([]string{}, fresh...), stale...) {
		old[id] = e.runningAllocs("team-a", id, 1, 90*time.Second, nil)[0].ID
	}
	e.waitCheckpointed(fresh, old)
	// The victims are chosen by least work lost. A fresh trainer loses at
	// most about a second (it saves every second); a stale one loses all
	// it ran. Under load a stale trainer can start seconds after the
	// fresh ones, and one that has run only a second loses as little as a
	// fresh one: the order then flips. Wait until each stale trainer has
	// run clearly longer than a fresh one can lose (checkVictims requires
	// every victim to lose under 5 s), so the expected victims follow from
	// the rule, not from timing.
	for _, id := range stale {
		e.c.Eventually(60*time.Second, id+" has run "+staleRun.String(), func() error {
			if ran := e.ranFor(old[id], "train"); ran < staleRun {
				return fmt.Errorf("ran %s", ran.Round(time.Millisecond))
			}
			return nil
		})
	}
	return old
}

// waitCheckpointed waits until each trainer of ids (allocations by job
// in allocs) has saved a checkpoint on its own.
func (e *preemptEnv) waitCheckpointed(ids []string, allocs map[string]string) {
	for _, id := range ids {
		e.c.Eventually(30*time.Second, id+" checkpointed on its own", func() error {
			if !e.hasEvent(allocs[id], "^Checkpoint saved") {
				return fmt.Errorf("no checkpoint event yet")
			}
			return nil
		})
	}
}

// staleRun is how long the stale trainers run before team-b reclaims:
// clearly more than the work a fresh trainer can lose (about a second,
// under 5 s as checkVictims asserts).
const staleRun = 8 * time.Second

// ranFor is how long task of allocation allocID has run (zero before it
// started).
func (e *preemptEnv) ranFor(allocID, task string) time.Duration {
	a, _, err := e.c.API.Allocations().Info(allocID, nil)
	must.NoError(e.t, err)
	ts := a.TaskStates[task]
	if ts == nil || ts.StartedAt.IsZero() {
		return 0
	}
	return time.Since(ts.StartedAt)
}

// reclaim submits team-b's 4-GPU job and returns how long until it runs
// and the work each victim lost.
func (e *preemptEnv) reclaim() reclaimResult {
	e.t.Helper()
	start := time.Now()
	e.train("team-b", "b-train", "standard", 2, 2, "-step-time", "100ms", "-steps", "30")
	e.runningAllocs("team-b", "b-train", 2, 90*time.Second, nil)
	res := reclaimResult{latency: time.Since(start)}
	d := e.preemptionOf("team-b", "b-train")
	for _, v := range d.Victims {
		res.lost = append(res.lost, v.LostWorkSeconds)
	}
	return res
}

func (e *preemptEnv) preemptionOf(ns, id string) allotapi.Decision {
	e.t.Helper()
	for _, d := range e.decisions() {
		if d.Kind == "preemption" && d.Namespace == ns && d.JobID == id {
			return d
		}
	}
	e.t.Fatalf("no preemption by %s/%s in %v", ns, id, e.decisions())
	return allotapi.Decision{}
}

var (
	requestedStep = regexp.MustCompile(`checkpointed step (\d+) on request`)
	startedStep   = regexp.MustCompile(`starting at step (\d+)`)
)

// checkVictims asserts the victims are the jobs with the most recent
// checkpoints, that they checkpointed on the way out, and that they were
// requeued.
func (e *preemptEnv) checkVictims(t *testing.T, old map[string]string) map[string]int {
	d := e.preemptionOf("team-b", "b-train")
	var names []string
	for _, v := range d.Victims {
		names = append(names, v.JobID)
		must.Less(t, 5.0, v.LostWorkSeconds, must.Sprintf("victim %s checkpointed about a second ago", v.JobID))
	}
	sort.Strings(names)
	must.Eq(t, fresh, names, must.Sprintf("decision: %+v", d))
	must.Eq(t, "reclaim", d.Cause)
	saved := map[string]int{}
	for _, id := range fresh {
		j := e.job("team-a", id)
		must.True(t, held(j), must.Sprintf("%s is held: %v", id, j.Meta))
		must.Eq(t, "1", j.Meta["allot.requeues"])
		must.Eq(t, sealerFromNomad(t, e.c).Ref("team-b/b-train"), j.Meta["allot.preempted-by"], must.Sprint("an opaque reference to the preemptor (audit #27)"))
		must.True(t, e.hasEvent(old[id], "^Checkpoint requested"), must.Sprint(e.c.TaskEvents(old[id], "train")))
		m := requestedStep.FindStringSubmatch(e.c.TaskLogs(old[id], "train", "stdout"))
		must.SliceLen(t, 2, m, must.Sprintf("%s checkpointed when stopped", id))
		saved[id], _ = strconv.Atoi(m[1])
	}
	for _, id := range stale {
		must.False(t, held(e.job("team-a", id)), must.Sprintf("%s keeps running", id))
	}
	must.StrContains(t, e.metric(`allot_preemptions_total{reason="reclaim"}`), " 2")
	return saved
}

// checkResume waits until the victims run again and asserts each resumed
// from the step it checkpointed when preempted.
func (e *preemptEnv) checkResume(t *testing.T, old map[string]string, saved map[string]int) {
	for _, id := range fresh {
		a := e.runningAllocs("team-a", id, 1, 120*time.Second, map[string]bool{old[id]: true})[0]
		var step int
		e.c.Eventually(30*time.Second, id+" resumed", func() error {
			m := startedStep.FindStringSubmatch(e.c.TaskLogs(a.ID, "train", "stdout"))
			if m == nil {
				return fmt.Errorf("no start line yet")
			}
			step, _ = strconv.Atoi(m[1])
			return nil
		})
		must.Eq(t, saved[id], step, must.Sprintf("%s resumes from its checkpoint", id))
		must.Positive(t, step)
	}
}

// checkGangTimeout submits a gang job Nomad can only partly place and
// waits until the governor requeues it with a reason.
func (e *preemptEnv) checkGangTimeout(t *testing.T) {
	e.submit("gang", gangTmpl)
	e.c.Eventually(90*time.Second, "gang job requeued", func() error {
		j := e.job("team-c", "gang")
		if n, _ := strconv.Atoi(j.Meta["allot.requeues"]); n < 1 {
			return fmt.Errorf("not requeued yet: stop=%v meta=%v", *j.Stop, j.Meta)
		}
		return nil
	})
	var rec *allotapi.Decision
	for _, d := range e.decisions() {
		if d.Kind == "requeue" && d.JobID == "gang" {
			d := d
			rec = &d
		}
	}
	must.NotNil(t, rec)
	must.Eq(t, "gang-timeout", rec.Cause)
	must.StrContains(t, rec.Reason, "gang timeout: only 2 of 3 allocations started")
}

func TestE2E_Preemption(t *testing.T) {
	e := newPreemptEnv(t)
	var old map[string]string
	var saved map[string]int
	t.Run("team-a borrows all 8 GPUs", func(t *testing.T) { old = e.borrowAll() })
	t.Run("team-b reclaims 4: the freshest checkpoints are preempted", func(t *testing.T) {
		res := e.reclaim()
		t.Logf("reclaim latency %s, work lost per victim %v s", res.latency.Round(time.Millisecond), res.lost)
		saved = e.checkVictims(t, old)
	})
	t.Run("victims resume from their checkpoints", func(t *testing.T) { e.checkResume(t, old, saved) })
	t.Run("a gang that cannot fully place is requeued", e.checkGangTimeout)
}

// BenchmarkE2E_Reclaim measures, in the e2e scenario, the time from
// team-b's submission to its job running and the work each victim lost.
func BenchmarkE2E_Reclaim(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newPreemptEnv(b)
		e.borrowAll()
		b.StartTimer()
		res := e.reclaim()
		b.StopTimer()
		b.ReportMetric(res.latency.Seconds(), "reclaim-s")
		var sum float64
		for _, l := range res.lost {
			sum += l
		}
		b.ReportMetric(sum/float64(len(res.lost)), "lost-work-s/victim")
	}
}
