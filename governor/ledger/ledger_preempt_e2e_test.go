//go:build e2e

package ledger_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/ledger"
)

// preemption is what the preemption step recorded: the victim
// allocations and the preemptor the ledger must name for each.
type preemption struct {
	victims map[string]string // alloc ID → preempted_by
}

// preempt makes governor A preempt deterministically on an empty train
// pool: team-b (quota 4, limit 8) runs two 4-H200 jobs, borrowing every
// device beyond its quota, then team-a (quota 4, nothing running) asks
// for 4: the governor reclaims team-b's borrowed devices by requeueing a
// job. It waits until team-a runs and the SQLite ledger (A's) shows the
// victims preempted, then stops team-b's jobs so the workload starts on
// an empty pool.
func (e *ledgerEnv) preempt(db *ledger.DB) preemption {
	e.t.Helper()
	borrow := []string{"borrow0", "borrow1"}
	for _, id := range borrow {
		e.submitThrough(e.a, "team-b", id, "train", "H200", 4, 600, 0)
	}
	running := map[string]string{} // alloc ID → job ID
	e.c.Eventually(90*time.Second, "team-b's two 4-H200 jobs running", func() error {
		for _, id := range borrow {
			for _, a := range e.jobAllocs("team-b", id) {
				if a.ClientStatus == api.AllocClientStatusRunning {
					running[a.ID] = id
				}
			}
		}
		if len(running) < 2 {
			return fmt.Errorf("%d of 2 running", len(running))
		}
		return nil
	})
	e.submitThrough(e.a, "team-a", "claim", "train", "H200", 4, 2, 0)
	e.c.Eventually(90*time.Second, "team-a's claim started after a preemption", func() error {
		for _, a := range e.jobAllocs("team-a", "claim") {
			if a.ClientStatus == api.AllocClientStatusRunning || a.ClientStatus == api.AllocClientStatusComplete {
				return nil
			}
		}
		return fmt.Errorf("claim not started; governor says: %s", e.why("team-a", "claim"))
	})
	// Admitted only once the victim's devices were free: Nomad never
	// blocked it (issue 15's phantom capacity admitted it onto devices
	// the stopping victim still held).
	evals, _, err := e.c.API.Jobs().Evaluations("claim", &api.QueryOptions{Namespace: "team-a"})
	must.NoError(e.t, err)
	for _, ev := range evals {
		must.Eq(e.t, "", ev.BlockedEval, must.Sprintf("evaluation %s of team-a/claim found no room in Nomad", ev.ID[:8]))
	}
	p := preemption{victims: map[string]string{}}
	for allocID, id := range running {
		j, _, err := e.c.API.Jobs().Info(id, &api.QueryOptions{Namespace: "team-b"})
		must.NoError(e.t, err)
		if n, _ := strconv.Atoi(j.Meta["allot.requeues"]); n == 0 {
			continue
		}
		// Nomad's meta holds an opaque reference; the governor, which
		// knows every job's key, records the preemptor's job in the ledger.
		must.NotEq(e.t, "", j.Meta["allot.preempted-by"], must.Sprintf("requeued %s names its preemptor", id))
		e.t.Logf("preemption: team-b/%s requeued (allocation %s, allot.preempted-by %q)", id, allocID[:8], j.Meta["allot.preempted-by"])
		p.victims[allocID] = "team-a/claim"
	}
	must.MapLen(e.t, 1, p.victims, must.Sprint("one 4-H200 job of team-b reclaimed for team-a's 4"))
	e.waitPreempted(db, p, 60*time.Second)
	for _, id := range borrow {
		_, _, err := e.c.API.Jobs().Deregister(id, false, &api.WriteOptions{Namespace: "team-b"})
		must.NoError(e.t, err)
	}
	return p
}

// jobAllocs lists the allocations of ns/id.
func (e *ledgerEnv) jobAllocs(ns, id string) []*api.AllocationListStub {
	list, _, err := e.c.API.Jobs().Allocations(id, true, &api.QueryOptions{Namespace: ns})
	must.NoError(e.t, err)
	return list
}

// waitPreempted waits until db holds each victim's segment closed with
// outcome preempted and preempted_by the governor's reference.
func (e *ledgerEnv) waitPreempted(db *ledger.DB, p preemption, timeout time.Duration) {
	e.t.Helper()
	e.c.Eventually(timeout, "victims recorded preempted in the ledger", func() error {
		return checkPreempted(db, p)
	})
}

func checkPreempted(db *ledger.DB, p preemption) error {
	var problems []string
	for allocID, by := range p.victims {
		var outcome, got string
		var open int
		err := db.SQL().QueryRow(`SELECT outcome, preempted_by, open FROM segments WHERE alloc_id = ? AND model <> ''`, allocID).
			Scan(&outcome, &got, &open)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", allocID[:8], err))
		case outcome != ledger.OutcomePreempted || got != by || open != 0:
			problems = append(problems, fmt.Sprintf("%s: outcome %q preempted_by %q open %d, want preempted by %q",
				allocID[:8], outcome, got, open, by))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// why returns governor A's explanation of ns/id (for failure messages).
func (e *ledgerEnv) why(ns, id string) string {
	req, err := http.NewRequest(http.MethodGet, e.a.Addr+"/allot/v1/jobs/"+ns+"/"+id+"/why", nil)
	if err != nil {
		return err.Error()
	}
	req.Header.Set("X-Nomad-Token", e.c.ManagementToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.Status + " " + string(body)
}
