//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestE2E_RequeueRest: with requeue_rest set, a job requeued by
// preemption and admitted again rests: its tenant's next higher-class job
// takes another victim, although the resting one would lose least.
// team-a (limit 8) runs two low 4-GPU trainers on the two 4-GPU nodes:
// "rare" saves only when asked, "often" every half second, so "often"
// loses least. A standard job s1 (limit reached) preempts "often"; s1
// ends, "often" runs again. A second standard job s2 then preempts
// "rare": "often", admitted again less than requeue_rest ago, rests.
// Without the rest, s2 takes "often" again (it has run only seconds).
func TestE2E_RequeueRest(t *testing.T) {
	e := newPreemptEnvWith(t, "requeue_rest = \"1m\"\n")
	e.train("team-a", "rare", "low", 1, 4, "-step-time", "100ms")
	e.runningAllocs("team-a", "rare", 1, 60*time.Second, nil)
	e.train("team-a", "often", "low", 1, 4, "-step-time", "100ms", "-save-every", "5")
	first := e.runningAllocs("team-a", "often", 1, 60*time.Second, nil)
	e.c.Eventually(30*time.Second, "often saves checkpoints", func() error {
		if !e.hasEvent(first[0].ID, "Checkpoint saved") {
			return fmt.Errorf("no checkpoint saved yet")
		}
		return nil
	})

	e.train("team-a", "s1", "standard", 1, 4, "-step-time", "100ms", "-steps", "30")
	p1 := e.awaitOnePreemption("team-a", "s1", "priority")
	must.SliceLen(t, 1, p1.Victims)
	must.Eq(t, "often", p1.Victims[0].JobID, must.Sprintf("premise: the job saving often loses least: %+v", p1.Victims))

	skip := map[string]bool{first[0].ID: true}
	back := e.runningAllocs("team-a", "often", 1, 90*time.Second, skip) // s1 ended, often is back

	e.train("team-a", "s2", "standard", 1, 4, "-step-time", "100ms")
	var p2 []string
	for _, d := range e.awaitPreemptions("team-a", 2) {
		if d.JobID == "s2" {
			for _, v := range d.Victims {
				p2 = append(p2, v.JobID)
			}
			t.Logf("s2: %s (%s)", d.Reason, d.Cause)
		}
	}
	must.Eq(t, []string{"rare"}, p2, must.Sprint("often rests after its requeue"))
	e.runningAllocs("team-a", "s2", 1, 90*time.Second, nil)
	for _, a := range e.allocs("team-a", "often") {
		if a.ID == back[0].ID {
			must.Eq(t, "running", a.ClientStatus, must.Sprint("often kept running"))
		}
	}
}
