package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/actuate"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/quota"
)

// The phantom free-capacity defect (issue 15): team-b (quota 4, limit 8)
// runs two 4-GPU jobs on two 4-GPU nodes, borrowing team-a's nominal;
// team-a (quota 4) then asks for 4. The governor preempts one of team-b's
// jobs, and must not admit team-a's job before Nomad frees the victim's
// GPUs. These tests replay, through the store's event decoding, the order
// in which Nomad 1.6.1 reports a preemption, and check every cycle.

// phantomEnv is a reconciler over a store fed by replayed event frames.
type phantomEnv struct {
	t     *testing.T
	r     *Reconciler
	mem   *memJobs
	index uint64
}

func newPhantomEnv(t *testing.T, jobs ...*api.Job) *phantomEnv {
	store := cluster.NewStore(quota.NewBook([]string{"standard", "low", "production"}), nil)
	store.UseSealer(testSealer)
	meta := map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "8"}
	store.SetNamespaces([]*api.Namespace{{Name: "team-a", Meta: meta}, {Name: "team-b", Meta: meta}})
	mem := &memJobs{jobs: map[string]*api.Job{}, now: testNow}
	for _, j := range jobs {
		mem.jobs[*j.Namespace+"/"+*j.ID] = j
	}
	n1, n2 := testNode(), testNode()
	n2.ID = "n2"
	store.Reset(&cluster.Initial{Index: 10, Nodes: []*api.Node{n1, n2}, Jobs: jobs})
	r := &Reconciler{Store: store, Config: engine.Config{StarvationTimeout: time.Hour, Classes: map[string]engine.Class{
		"standard": {Priority: 50, Preemptible: true}, "low": {Priority: 30, Preemptible: true}, "production": {Priority: 90, Restricted: true}}},
		Metrics: metrics.New(), Log: hclog.NewNullLogger(), Now: testNow, Interval: time.Hour,
		Actuator: &actuate.Actuator{Jobs: mem, Store: store, Sealer: testSealer, Log: hclog.NewNullLogger(), Now: testNow}}
	return &phantomEnv{t: t, r: r, mem: mem, index: 10}
}

// heldJob is a 4-GPU batch job of ns that the governor held.
func heldJob(ns, id string) *api.Job {
	j := gpuJob(id, 4, true)
	j.Namespace = ptr(ns)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := testSealer.Hold(j, jobmeta.Record{}, jobmeta.Stamp{Now: at}); err != nil {
		panic(err)
	}
	return j
}

// apply feeds one event to the store the way the watcher does: as an
// NDJSON frame decoded by cluster.ReadFrames.
func (e *phantomEnv) apply(topic api.Topic, payload map[string]any) {
	e.t.Helper()
	e.index++
	line, err := json.Marshal(map[string]any{"Index": e.index, "Events": []map[string]any{{
		"Topic": topic, "Type": "Updated", "Index": e.index, "Payload": payload}}})
	must.NoError(e.t, err)
	ch := make(chan *cluster.Frame, 2)
	cluster.ReadFrames(context.Background(), bytes.NewReader(append(line, '\n')), ch)
	f := <-ch
	must.NoError(e.t, f.Err)
	must.NoError(e.t, e.r.Store.Apply(f))
}

// alloc reports allocation id of ns/job on node with Nomad's desired and
// client status, holding 4 H200s.
func (e *phantomEnv) alloc(id, ns, job, node, desired, client string) {
	devs := []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H200", DeviceIDs: []string{"a", "b", "c", "d"}}}
	e.apply(api.TopicAllocation, map[string]any{"Allocation": &api.Allocation{ID: id, Namespace: ns, JobID: job, TaskGroup: "g",
		NodeID: node, DesiredStatus: desired, ClientStatus: client, CreateIndex: e.index + 1,
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": {
			Cpu: api.AllocatedCpuResources{CpuShares: 100}, Memory: api.AllocatedMemoryResources{MemoryMB: 300}, Devices: devs}}}}})
}

// job reports Nomad's stored copy of ns/id with status and, as the
// registration's own transaction does, ModifyIndex == JobModifyIndex.
func (e *phantomEnv) job(ns, id, status string) {
	j := *e.mem.jobs[ns+"/"+id]
	j.Status = ptr(status)
	j.ModifyIndex = j.JobModifyIndex
	e.apply(api.TopicJob, map[string]any{"Job": &j})
}

// cycle runs one cycle and returns the actions it decided by job key.
func (e *phantomEnv) cycle() (map[string]engine.Action, *engine.Plan) {
	p := e.r.Cycle(context.Background())
	out := map[string]engine.Action{}
	for _, d := range p.Decisions {
		out[d.Namespace+"/"+d.JobID] = d.Action
	}
	return out, p
}

// borrowThenClaim brings the scenario to team-a's claim submitted (held)
// while team-b's two jobs run on n1 and n2.
func borrowThenClaim(t *testing.T) *phantomEnv {
	e := newPhantomEnv(t, heldJob("team-b", "borrow0"), heldJob("team-b", "borrow1"))
	acts, _ := e.cycle()
	must.Eq(t, map[string]engine.Action{"team-b/borrow0": engine.Admit, "team-b/borrow1": engine.Admit}, acts,
		must.Sprint("team-b borrows team-a's unused nominal"))
	e.alloc("b0", "team-b", "borrow0", "n1", "run", "running")
	e.alloc("b1", "team-b", "borrow1", "n2", "run", "running")
	claim := heldJob("team-a", "claim")
	e.mem.jobs["team-a/claim"] = claim
	e.job("team-a", "claim", "dead")
	return e
}

// preempt runs the cycle that preempts for the claim and returns the
// victim's job, its allocation and the allocation's node.
func (e *phantomEnv) preempt() (string, string, string) {
	t := e.t
	acts, p := e.cycle()
	must.SliceLen(t, 1, p.Preemptions)
	must.SliceLen(t, 1, p.Preemptions[0].Victims, must.Sprint("one 4-GPU job frees enough"))
	v := p.Preemptions[0].Victims[0]
	must.Eq(t, engine.Requeue, acts[v.Namespace+"/"+v.JobID])
	must.MapNotContainsKey(t, acts, "team-a/claim", must.Sprint("the claim waits for the victim"))
	if v.JobID == "borrow0" {
		return "borrow0", "b0", "n1"
	}
	return "borrow1", "b1", "n2"
}

// victimStopped: the victim's client reports its allocation complete, and
// the next cycle admits the claim.
func (e *phantomEnv) victimStopped(victim, allocID, node string) {
	e.t.Helper()
	e.alloc(allocID, "team-b", victim, node, "stop", "complete")
	acts, _ := e.cycle()
	must.Eq(e.t, engine.Admit, acts["team-a/claim"], must.Sprint("admitted once Nomad freed the GPUs"))
}

// claimWaits runs a cycle and requires that it does not admit the claim.
func (e *phantomEnv) claimWaits(when string) {
	e.t.Helper()
	acts, p := e.cycle()
	must.MapNotContainsKey(e.t, acts, "team-a/claim", must.Sprintf("%s: the victim's GPUs are not free in Nomad yet", when))
	v := p.Verdicts["team-a/claim"]
	must.NotNil(e.t, v)
	must.Eq(e.t, engine.Queued, v.State)
	must.StrContains(e.t, v.Reason, "waiting for stopping jobs", must.Sprint(when))
}

func TestPhantom_VictimHoldsItsGPUsUntilItsClientStopsIt(t *testing.T) {
	e := borrowThenClaim(t)
	victim, allocID, node := e.preempt()
	// Nomad has stored the victim held; its scheduler has not planned the
	// stop yet.
	e.job("team-b", victim, "running")
	e.claimWaits("victim held, its allocation still desired to run")
	// The stop is planned: desired status stop, the task still running
	// (checkpointing). Nomad's scheduler counts the allocation's devices
	// until the client reports it terminal; before the fix the store
	// dropped it here and the next cycle admitted the claim onto GPUs
	// Nomad did not have (its evaluation blocked).
	e.alloc(allocID, "team-b", victim, node, "stop", "running")
	e.claimWaits("victim's allocation stopping")
	snap := e.r.Store.Snapshot(testNow())
	var stopping int
	for _, a := range snap.Allocs {
		if a.Stopping {
			stopping++
			must.False(t, a.Live, must.Sprint("a stopping allocation is not placed for its job"))
		}
	}
	must.Eq(t, 1, stopping)
	// The client reports it finished: the GPUs are free.
	e.victimStopped(victim, allocID, node)
}

func TestPhantom_RegistrationStatusDeadKeepsTheReservation(t *testing.T) {
	e := borrowThenClaim(t)
	victim, allocID, node := e.preempt()
	e.victimStopped(victim, allocID, node)
	// Nomad stores the admission in two transactions at one index: the
	// job first, with the status computed before its new evaluation
	// exists ("dead": every earlier allocation and evaluation finished),
	// then the evaluation, which makes it "pending".
	e.job("team-a", "claim", "dead")
	j, ok := e.r.Store.Job("team-a", "claim")
	must.True(t, ok)
	must.Eq(t, engine.Admitted, j.State)
	must.False(t, j.Dead, must.Sprint("the registration's own status is not the job's end"))
	v, _ := e.r.Reserve(cluster.ConvertJob(heldJob("team-a", "extra")))
	must.False(t, v.Admitted, must.Sprintf("the claim's 4 GPUs are reserved for it: %s", v.Reason))
	// A real end (a later index) still counts.
	done := *e.mem.jobs["team-a/claim"]
	done.Status, done.ModifyIndex = ptr("dead"), ptr(*done.JobModifyIndex+5)
	e.apply(api.TopicJob, map[string]any{"Job": &done})
	j, _ = e.r.Store.Job("team-a", "claim")
	must.True(t, j.Dead)
}

func TestPhantom_AdmittedButBlockedInNomadSaysSo(t *testing.T) {
	e := borrowThenClaim(t)
	victim, allocID, node := e.preempt()
	e.victimStopped(victim, allocID, node)
	must.MapContainsKey(t, e.mem.jobs["team-a/claim"].Meta, jobmeta.PinKey, must.Sprint("admitted with a placement pin"))
	version := *e.mem.jobs["team-a/claim"].JobModifyIndex
	e.job("team-a", "claim", "pending")
	_, p := e.cycle()
	must.StrContains(t, p.Verdicts["team-a/claim"].Reason, "waiting for Nomad to place 1 of 1 allocations")
	// Nomad found no room (say, the node was drained meanwhile): a
	// blocked evaluation for the claim's version.
	e.apply(api.TopicEvaluation, map[string]any{"Evaluation": &api.Evaluation{ID: "ev-blocked", Namespace: "team-a",
		JobID: "claim", Status: api.EvalStatusBlocked, TriggeredBy: "queued-allocs", JobModifyIndex: version}})
	must.True(t, e.r.Store.Blocked("team-a", "claim"))
	acts, p := e.cycle()
	v := p.Verdicts["team-a/claim"]
	must.Eq(t, engine.Admitted, v.State)
	must.StrContains(t, v.Reason, "blocked in Nomad")
	must.StrNotContains(t, v.Reason, "running under Nomad")
	// The cycle admitted the claim with a placement pin; pinned and
	// blocked, it is unpinned (still admitted), never held or requeued.
	must.Eq(t, map[string]engine.Action{"team-a/claim": engine.Unpin}, acts)
	stored := e.mem.jobs["team-a/claim"]
	must.Eq(t, jobmeta.StateAdmitted, stored.Meta[jobmeta.State])
	must.MapNotContainsKey(t, stored.Meta, jobmeta.PinKey, must.Sprint("the pin is gone"))
	extra, _ := e.r.Reserve(cluster.ConvertJob(heldJob("team-a", "extra")))
	must.False(t, extra.Admitted, must.Sprint("a blocked admission keeps its reservation"))
	// Nomad places it: the evaluation completes, the allocation runs.
	e.apply(api.TopicEvaluation, map[string]any{"Evaluation": &api.Evaluation{ID: "ev-blocked", Namespace: "team-a",
		JobID: "claim", Status: api.EvalStatusComplete, JobModifyIndex: version}})
	e.alloc("c0", "team-a", "claim", node, "run", "running")
	_, p = e.cycle()
	must.False(t, e.r.Store.Blocked("team-a", "claim"))
	must.Eq(t, "admitted: running under Nomad", p.Verdicts["team-a/claim"].Reason)
}
