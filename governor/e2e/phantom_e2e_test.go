//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// phantomRounds is how often TestE2E_NoPhantomCapacity repeats the
// borrow-then-claim scenario in one cluster.
const phantomRounds = 5

// TestE2E_NoPhantomCapacity repeats, in one cluster of two 4-H200 nodes,
// the scenario that once admitted a job onto capacity that was not free
// (issue 15): team-b (quota 4, limit 8) runs two 4-GPU jobs through the
// governor, borrowing team-a's nominal; then team-a (quota 4, nothing
// running) asks for 4. Every round: exactly one of team-b's jobs is
// preempted, team-a's job runs within a deadline, and team-a's job is
// never admitted while both of team-b's jobs still run or while Nomad
// holds a blocked evaluation for it.
func TestE2E_NoPhantomCapacity(t *testing.T) {
	e := newPhantomEnv(t)
	for round := 0; round < phantomRounds; round++ {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) { e.phantomRound(t, round) })
	}
	t.Run("an admission Nomad blocks says so", e.blockedAdmission)
}

// blockedAdmission: a job the governor admitted but Nomad could not
// place in full is reported "blocked in Nomad", not "running under
// Nomad".
func (e *env) blockedAdmission(t *testing.T) {
	t.Cleanup(func() { e.purge(t, map[string][]string{"team-a": {"spread"}}) })
	p := filepath.Join(e.dir, "spread.nomad.hcl")
	must.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(distinctHostsTmpl, "spread", "team-a")), 0o644))
	out := e.nomadCLI(t, "job", "run", "-detach", p)
	must.StrContains(t, out, "admitted")
	e.c.Eventually(60*time.Second, "Nomad blocks the third allocation", func() error {
		if n := e.blockedEvals("team-a", "spread"); n == 0 {
			return fmt.Errorf("no blocked evaluation yet")
		}
		return nil
	})
	e.c.Eventually(30*time.Second, "the governor reports the admission blocked", func() error {
		w := e.why("team-a", "spread")
		if w.State != "admitted" || !strings.Contains(w.Reason, "blocked in Nomad: 1 of 3 allocations not placed") {
			return fmt.Errorf("governor says %s: %s", w.State, w.Reason)
		}
		return nil
	})
}

func newPhantomEnv(t *testing.T) *env {
	return newGPUEnv(t, map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "8"},
		map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "8"})
}

// phantomRound runs one borrow-then-claim round and removes its jobs.
func (e *env) phantomRound(t *testing.T, round int) {
	borrow := []string{fmt.Sprintf("borrow-%d-0", round), fmt.Sprintf("borrow-%d-1", round)}
	claim := fmt.Sprintf("claim-%d", round)
	t.Cleanup(func() { e.purge(t, map[string][]string{"team-b": borrow, "team-a": {claim}}) })
	for _, id := range borrow {
		e.run("team-b", id, "borrow", 4)
	}
	for _, id := range borrow {
		e.waitRunning("team-b", id, 90*time.Second)
	}
	e.run("team-a", claim, "claim", 4)
	start := time.Now()
	e.c.Eventually(90*time.Second, "team-a/"+claim+" running after one preemption", func() error {
		// Read the victims first: once the claim is seen admitted, a
		// victim read before must already have been held.
		heldBorrow := e.heldCount("team-b", borrow)
		j := e.job("team-a", claim)
		if held(j) {
			return fmt.Errorf("claim still held")
		}
		if heldBorrow == 0 && e.heldCount("team-b", borrow) == 0 {
			t.Fatalf("team-a/%s admitted (meta %v) while both of team-b's jobs run: phantom free capacity", claim, j.Meta)
		}
		if blocked := e.blockedEvals("team-a", claim); blocked > 0 {
			t.Fatalf("team-a/%s admitted but Nomad has %d blocked evaluation(s) for it (governor says: %+v)", claim, blocked, e.why("team-a", claim))
		}
		for _, a := range e.jobAllocs("team-a", claim) {
			if a.ClientStatus == api.AllocClientStatusRunning {
				return nil
			}
		}
		return fmt.Errorf("claim admitted, not running yet")
	})
	t.Logf("round %d: team-a/%s running %s after its submission", round, claim, time.Since(start).Round(time.Millisecond))
	// Nomad never had to block it: no evaluation of the claim found its
	// nodes full (one that did names the blocked evaluation it created,
	// even after that one completed).
	evals, _, err := e.c.API.Jobs().Evaluations(claim, &api.QueryOptions{Namespace: "team-a"})
	must.NoError(t, err)
	must.Positive(t, len(evals))
	for _, ev := range evals {
		must.Eq(t, "", ev.BlockedEval, must.Sprintf("evaluation %s of team-a/%s (%s) found no room in Nomad", ev.ID[:8], claim, ev.TriggeredBy))
		must.NotEq(t, api.EvalStatusBlocked, ev.Status)
	}
	var victims []string
	for _, id := range borrow {
		j := e.job("team-b", id)
		if held(j) {
			must.Eq(t, "1", j.Meta["allot.requeues"], must.Sprintf("%s requeued once", id))
			victims = append(victims, id)
		}
	}
	must.SliceLen(t, 1, victims, must.Sprint("exactly one of team-b's jobs preempted for team-a's 4 GPUs"))
	w := e.why("team-a", claim)
	must.Eq(t, "admitted", w.State)
}

// heldCount counts the jobs of ns among ids that the governor holds.
func (e *env) heldCount(ns string, ids []string) int {
	n := 0
	for _, id := range ids {
		if held(e.job(ns, id)) {
			n++
		}
	}
	return n
}

// blockedEvals counts the blocked evaluations Nomad keeps for ns/id: it
// found no capacity for the job.
func (e *env) blockedEvals(ns, id string) int {
	evals, _, err := e.c.API.Jobs().Evaluations(id, &api.QueryOptions{Namespace: ns})
	must.NoError(e.t, err)
	n := 0
	for _, ev := range evals {
		if ev.Status == api.EvalStatusBlocked {
			n++
		}
	}
	return n
}

// jobAllocs lists the allocations of ns/id.
func (e *env) jobAllocs(ns, id string) []*api.AllocationListStub {
	list, _, err := e.c.API.Jobs().Allocations(id, true, &api.QueryOptions{Namespace: ns})
	must.NoError(e.t, err)
	return list
}

// purge removes the jobs (purged, so the next round starts clean) and
// waits until none of their allocations runs.
func (e *env) purge(t *testing.T, jobs map[string][]string) {
	for ns, ids := range jobs {
		for _, id := range ids {
			_, _, err := e.c.API.Jobs().Deregister(id, true, &api.WriteOptions{Namespace: ns})
			must.NoError(t, err)
		}
	}
	e.c.Eventually(60*time.Second, "every allocation of the round terminal", func() error {
		allocs, _, err := e.c.API.Allocations().List(&api.QueryOptions{Namespace: "*"})
		if err != nil {
			return err
		}
		for _, a := range allocs {
			if a.ClientStatus == api.AllocClientStatusPending || a.ClientStatus == api.AllocClientStatusRunning {
				return fmt.Errorf("allocation %s of %s/%s is %s", a.ID[:8], a.Namespace, a.JobID, a.ClientStatus)
			}
		}
		return nil
	})
}
