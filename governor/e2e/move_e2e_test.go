//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/internal/testcluster"
)

// moveConfig: a head starves after 3 s, a job may be moved after 2 s of
// run, and a moved job waits 1 s before it is admitted again; placement
// is "pack" (the default).
const moveConfig = `cycle_interval = "1s"
starvation_timeout = "3s"
move_min_run = "2s"
backoff_base = "1s"
backoff_cap = "2s"
`

// TestE2E_Move: a move on the real stack (docs/governor.md, Preemption,
// "Move"). Three clients of 8 inventory GPUs each (n1 < n2 < n3 by node
// ID, the engine's first-fit order). team-b runs three 6-GPU jobs (one
// per node) and two 2-GPU jobs (beside j1 and j2; j4 is a toy trainer on
// the ckpt driver that checkpoints every second); j1 is stopped: 8 GPUs
// are free (6 on n1, 2 on n3) but no node has 8. team-a (nominal 24, so
// only fit fails) submits an 8-GPU job; past the starvation timeout it is
// its pool's starving head, and the governor moves j4 (requeued, cause
// move) so that team-a's job runs on n1 and j4 runs again on n3, resumed
// from the checkpoint it saved when stopped. Nothing else is requeued.
// team-b stays within its nominal, so reclaim has no victim: only a move
// lets the head run before a node drains.
func TestE2E_Move(t *testing.T) { testMove(t, "standard") }

// TestE2E_MoveTakesSavingJobOfHigherClass: TestE2E_Move with j4 of class
// high, above the head's standard. A move takes no job of a higher class
// than its head unless the job saves a checkpoint when stopped: j4 runs
// under the ckpt driver, so it is moved all the same, and resumes on n3
// from the checkpoint it saved (docs/governor.md, Preemption, "Move").
// Without that exception the head ran on another node than n1 (checked
// on a scratch build): j4 stayed and another job moved.
func TestE2E_MoveTakesSavingJobOfHigherClass(t *testing.T) { testMove(t, "high") }

// testMove runs TestE2E_Move's scene with j4 of class j4Class.
func testMove(t *testing.T, j4Class string) {
	start := time.Now()
	pe := newMoveEnv(t)
	e := pe.env
	t.Logf("cluster and governor up in %s", time.Since(start).Round(time.Millisecond))
	node, allocs := pe.fragment(t, j4Class)
	n1, n3 := node["j1"], node["j3"]

	// 6 GPUs free on n1, 0 on n2, 2 on n3: team-a's gang fails only fit.
	submitted := time.Now()
	e.run("team-a", "big", "v1", 8)
	var bigNode string
	e.c.Eventually(45*time.Second, "team-a/big running", func() error {
		if a := e.runningAlloc("team-a", "big", ""); a != nil {
			bigNode = a.NodeID
			return nil
		}
		return e.queueState("team-a", "big")
	})
	t.Logf("team-a/big runs %s after its submission", time.Since(submitted).Round(time.Millisecond))
	must.Eq(t, n1, bigNode, must.Sprint("the head runs on the node the move cleared"))

	// j4 was requeued for the move and runs again, on n3.
	var j4Node, j4Alloc string
	e.c.Eventually(30*time.Second, "team-b/j4 running again", func() error {
		if a := e.runningAlloc("team-b", "j4", allocs["j4"]); a != nil {
			j4Node, j4Alloc = a.NodeID, a.ID
			return nil
		}
		return e.queueState("team-b", "j4")
	})
	must.Eq(t, n3, j4Node, must.Sprint("the moved job fits the free GPUs beside j3"))
	must.Eq(t, 1, jobmeta.Parse(e.job("team-b", "j4").Meta).Requeues)
	pe.checkResumed(t, "j4", allocs["j4"], j4Alloc)

	e.checkOnlyMove(t, allocs)
	t.Logf("move e2e: %s in all", time.Since(start).Round(time.Millisecond))
}

// newMoveEnv starts three clients of 8 inventory GPUs (pool gpu, the ckpt
// driver with one shared checkpoint root), team-a and team-b with a
// nominal of 24 GPUs each, and a governor with moveConfig.
func newMoveEnv(t *testing.T) *preemptEnv {
	return newCkptEnv(t, moveConfig, map[string]map[string]string{
		"team-a": {"allot.quota.gpu": "24", "allot.limit.gpu": "24"},
		"team-b": {"allot.quota.gpu": "24", "allot.limit.gpu": "24"},
	})
}

// newCkptEnv starts three clients of 8 inventory GPUs each (pool gpu,
// the ckpt driver with one shared checkpoint root: a requeued trainer
// resumes on any node), the namespaces with their meta and a governor
// with config cfg.
func newCkptEnv(t *testing.T, cfg string, namespaces map[string]map[string]string) *preemptEnv {
	dir, root := t.TempDir(), t.TempDir()
	clients := gpuClients(t, dir, 8, "gpu-1", "gpu-2", "gpu-3")
	for _, cl := range clients {
		cl.PluginConfig["nomad-driver-ckpt"] = fmt.Sprintf("checkpoint_root = %q\npoll_interval = \"100ms\"\nsaved_event_interval = \"1s\"\n%s",
			root, testcluster.CkptUnisolated)
	}
	c := testcluster.New(t, testcluster.Options{Plugins: []string{"nomad-device-accel", "nomad-driver-ckpt"}, Clients: clients})
	nomad, err := testcluster.NomadBinary()
	must.NoError(t, err)
	e := &env{t: t, c: c, nomad: nomad, dir: dir}
	names := make([]string, 0, len(namespaces))
	for ns := range namespaces {
		names = append(names, ns)
	}
	sort.Strings(names)
	for _, ns := range names {
		e.namespace(ns, namespaces[ns])
	}
	p := filepath.Join(dir, "governor.hcl")
	must.NoError(t, os.WriteFile(p, []byte(cfg), 0o644))
	e.g = c.StartGovernor("-config", p)
	e.gov = &allotapi.Client{Address: e.g.Addr}
	return &preemptEnv{env: e, trainer: testcluster.BuildToyTrainer(t, dir)}
}

// fragment runs team-b's j1, j2, j3 (6 GPUs) and j4 (2 GPUs, class
// j4Class), j5 (2 GPUs) one by one, checks that first fit put them on n1,
// n2, n3, n1, n2, waits for j4's first checkpoint and stops j1. It
// returns each job's node and running allocation.
func (e *preemptEnv) fragment(t *testing.T, j4Class string) (node, allocs map[string]string) {
	node, allocs = map[string]string{}, map[string]string{}
	runB := func(id string, gpus int) {
		if id == "j4" {
			// The job to be moved: a toy trainer on the ckpt driver that
			// saves a checkpoint every second.
			e.train("team-b", id, j4Class, 1, gpus, "-step-time", "100ms", "-save-every", "10")
		} else {
			e.run("team-b", id, "v1", gpus)
		}
		a := e.c.WaitForAlloc("team-b", id, 60*time.Second, testcluster.ClientStatus(api.AllocClientStatusRunning))
		node[id], allocs[id] = a.NodeID, a.ID
	}
	for _, id := range []string{"j1", "j2", "j3"} {
		runB(id, 6)
	}
	n1, n2, n3 := node["j1"], node["j2"], node["j3"]
	must.True(t, n1 < n2 && n2 < n3, must.Sprintf("the 6-GPU jobs are packed first fit in node ID order: %v", node))
	runB("j4", 2)
	runB("j5", 2)
	must.Eq(t, n1, node["j4"], must.Sprintf("j4 is packed beside j1: %v", node))
	must.Eq(t, n2, node["j5"], must.Sprintf("j5 is packed beside j2: %v", node))

	e.c.Eventually(30*time.Second, "j4 checkpointed on its own", func() error {
		if !e.hasEvent(allocs["j4"], "^Checkpoint saved") {
			return fmt.Errorf("no checkpoint event yet")
		}
		return nil
	})
	e.stop("team-b", "j1")
	e.c.Eventually(30*time.Second, "j1's allocation stopped", func() error {
		a, _, err := e.c.API.Allocations().Info(allocs["j1"], nil)
		if err != nil {
			return err
		}
		if !a.ClientTerminalStatus() {
			return fmt.Errorf("client status %s", a.ClientStatus)
		}
		return nil
	})
	return node, allocs
}

// checkOnlyMove asserts that the governor recorded one preemption, the
// move of j4 for team-a/big, counted it under reason move, and requeued
// nothing else: j2, j3 and j5 run on their first allocations.
func (e *env) checkOnlyMove(t *testing.T, allocs map[string]string) {
	ds, err := e.gov.Decisions(context.Background())
	must.NoError(t, err)
	var preemptions []allotapi.Decision
	for _, d := range ds.Decisions {
		must.NotEq(t, "requeue", d.Kind, must.Sprintf("no other requeue: %+v", d))
		if d.Kind == "preemption" {
			preemptions = append(preemptions, d)
		}
	}
	must.SliceLen(t, 1, preemptions, must.Sprintf("decisions: %+v", ds.Decisions))
	p := preemptions[0]
	must.Eq(t, "team-a/big", p.Namespace+"/"+p.JobID)
	must.Eq(t, "move", p.Cause, must.Sprintf("decision: %+v", p))
	must.SliceLen(t, 1, p.Victims, must.Sprintf("decision: %+v", p))
	must.Eq(t, "team-b/j4", p.Victims[0].Namespace+"/"+p.Victims[0].JobID)
	t.Logf("the move: %s; j4 loses %.1f s of work", p.Reason, p.Victims[0].LostWorkSeconds)
	must.Less(t, 5.0, p.Victims[0].LostWorkSeconds, must.Sprint("j4 checkpointed about a second before the move"))

	var counted []string
	for _, line := range strings.Split(metrics(t, e.g.Addr), "\n") {
		if strings.HasPrefix(line, "allot_preemptions_total{") {
			counted = append(counted, line)
		}
	}
	must.Eq(t, []string{`allot_preemptions_total{reason="move"} 1`}, counted)

	for _, id := range []string{"j2", "j3", "j5"} {
		must.Zero(t, jobmeta.Parse(e.job("team-b", id).Meta).Requeues, must.Sprintf("%s was not requeued", id))
		a, _, err := e.c.API.Allocations().Info(allocs[id], nil)
		must.NoError(t, err)
		must.Eq(t, api.AllocClientStatusRunning, a.ClientStatus, must.Sprintf("%s runs on its first allocation", id))
	}
}

// runningAlloc is a running allocation of ns/id other than skip; nil when
// there is none.
func (e *env) runningAlloc(ns, id, skip string) *api.AllocationListStub {
	e.t.Helper()
	list, _, err := e.c.API.Jobs().Allocations(id, false, &api.QueryOptions{Namespace: ns})
	must.NoError(e.t, err)
	for _, a := range list {
		if a.ClientStatus == api.AllocClientStatusRunning && a.ID != skip {
			return a
		}
	}
	return nil
}

// queueState says why ns/id does not run yet: its state and verdict
// (/allot/v1/jobs/.../why) and the queue (/allot/v1/queue).
func (e *env) queueState(ns, id string) error {
	w, err := e.gov.Why(context.Background(), ns, id)
	if err != nil {
		return err
	}
	q, err := e.gov.Queue(context.Background())
	if err != nil {
		return err
	}
	return fmt.Errorf("%s/%s %s: %s; queue %v", ns, id, w.State, w.Reason, queueKeys(q))
}

// checkResumed asserts that trainer id checkpointed when its allocation
// old was stopped (moved or preempted) and that its new allocation
// resumed from that step: it lost no work.
func (e *preemptEnv) checkResumed(t *testing.T, id, old, resumed string) {
	must.True(t, e.hasEvent(old, "^Checkpoint requested"), must.Sprint(e.c.TaskEvents(old, "train")))
	m := requestedStep.FindStringSubmatch(e.c.TaskLogs(old, "train", "stdout"))
	must.SliceLen(t, 2, m, must.Sprintf("%s checkpointed when it was stopped", id))
	var started []string
	e.c.Eventually(30*time.Second, id+" resumed", func() error {
		if started = startedStep.FindStringSubmatch(e.c.TaskLogs(resumed, "train", "stdout")); started == nil {
			return fmt.Errorf("no start line yet")
		}
		return nil
	})
	must.Eq(t, m[1], started[1], must.Sprintf("%s resumes from the step it checkpointed when stopped", id))
	t.Logf("%s checkpointed step %s when stopped and resumed from it", id, m[1])
	must.NotEq(t, "0", started[1])
}
