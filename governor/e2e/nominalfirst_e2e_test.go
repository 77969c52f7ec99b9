//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
)

// TestE2E_ReclaimTakesBorrowedBeforeNominal: under fair_share_rule =
// "entitlement" a reclaim takes back what borrowers borrow before what
// their tenants were promised, where the victims run under the ckpt
// driver and so lose nothing when stopped (docs/governor.md, "Fair share
// by entitlement"; round 32 in docs/simulator.md). Three clients of 8
// GPUs; team-a (nominal 14) runs a1 on one; team-r (nominal 6) runs r1,
// an 8-GPU trainer that checkpoints every second, on the second (2 GPUs
// past its nominal); team-b (nominal 4) runs b1–b4, 2-GPU trainers that
// save only when asked, on the third (4 past its nominal). team-a's
// 4-GPU job boss is within its nominal and nothing is free. The fewest
// victims are r1 alone, which would leave team-r 6 GPUs below its
// nominal; two of team-b's trainers leave team-b at its nominal. Judged
// by their last checkpoints two of them lose more device time than r1
// (8 seconds or more each on 2 GPUs, against a second or two on 8): the
// reclaim takes them only because the governor reads from their jobspecs
// that they run under the ckpt driver, which saves before the stop.
func TestE2E_ReclaimTakesBorrowedBeforeNominal(t *testing.T) {
	start := time.Now()
	pe := newCkptEnv(t, `cycle_interval = "1s"
starvation_timeout = "10m"
fair_share_rule = "entitlement"
`, map[string]map[string]string{
		"team-a": {"allot.quota.gpu": "14", "allot.limit.gpu": "24"},
		"team-r": {"allot.quota.gpu": "6", "allot.limit.gpu": "24"},
		"team-b": {"allot.quota.gpu": "4", "allot.limit.gpu": "24"},
	})
	t.Logf("cluster and governor up in %s", time.Since(start).Round(time.Millisecond))
	pe.train("team-a", "a1", "standard", 1, 8, "-step-time", "100ms")
	pe.runningAllocs("team-a", "a1", 1, 90*time.Second, nil)
	pe.train("team-r", "r1", "standard", 1, 8, "-step-time", "100ms", "-save-every", "10")
	old := map[string]string{"r1": pe.runningAllocs("team-r", "r1", 1, 90*time.Second, nil)[0].ID}
	small := []string{"b1", "b2", "b3", "b4"}
	for _, id := range small {
		pe.train("team-b", id, "standard", 1, 2, "-step-time", "100ms")
		old[id] = pe.runningAllocs("team-b", id, 1, 90*time.Second, nil)[0].ID
	}
	pe.waitCheckpointed([]string{"r1"}, old)
	const ran = 8 * time.Second
	pe.c.Eventually(30*time.Second, fmt.Sprintf("b4 ran %s", ran), func() error {
		if d := pe.ranFor(old["b4"], "train"); d < ran {
			return fmt.Errorf("ran %s", d)
		}
		return nil
	})

	pe.train("team-a", "boss", "standard", 1, 4, "-step-time", "100ms")
	d := pe.awaitOnePreemption("team-a", "boss", "reclaim")
	must.SliceLen(t, 2, d.Victims, must.Sprintf("decision: %+v", d))
	for _, v := range d.Victims {
		must.Eq(t, "team-b", v.Namespace, must.Sprintf("decision: %+v", d))
		must.SliceContains(t, small, v.JobID)
		must.Greater(t, ran.Seconds(), v.LostWorkSeconds, must.Sprint("judged by its last checkpoint, the victim loses its whole run"))
	}
	pe.runningAllocs("team-a", "boss", 1, 60*time.Second, nil)
	must.Eq(t, 0, jobmeta.Parse(pe.job("team-r", "r1").Meta).Requeues, must.Sprint("r1 keeps running"))
	t.Logf("reclaim of borrowed capacity e2e: %s in all", time.Since(start).Round(time.Millisecond))
}
