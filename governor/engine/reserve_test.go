package engine

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// backfillSnapshot builds a one-pool cluster of 8-GPU nodes partly busy
// with jobs of known run time, a starving gang head that needs whole
// nodes and later small jobs with random run times (some unknown).
func backfillSnapshot(r *rand.Rand) *Snapshot {
	now := t0.Add(4 * time.Hour)
	tenants := []*Tenant{mkTenant("t").Build()}
	var nodes []*Node
	var allocs []*Alloc
	var jobs []*Job
	nNodes := 4 + r.Intn(4)
	for i := 0; i < nNodes; i++ {
		n := mkNode(fmt.Sprintf("n%d", i)).Devices(h200, 8).Build()
		nodes = append(nodes, n)
		left := 8
		for k := 0; left > 0 && r.Intn(4) > 0; k++ {
			g := 1 + r.Intn(left)
			left -= g
			rt := time.Duration(10+r.Intn(600)) * time.Minute
			id := fmt.Sprintf("run-%d-%d", i, k)
			j := mkJob("t", id).State(Admitted).CPU(500).Mem(512).Device(h200, g).Build()
			if r.Intn(5) > 0 {
				j.MaxRuntime = rt
			}
			a := alloc("t", id, "g", n.ID, 500, 512, map[string]int{h200: g})
			a.Started, a.StartedAt = true, now.Add(-time.Duration(r.Int63n(int64(rt))))
			jobs, allocs = append(jobs, j), append(allocs, a)
		}
	}
	head := mkJob("t", "head").QueuedAt(now.Add(-2*time.Hour)).Count(2+r.Intn(nNodes-1)).Device(h200, 8).Build()
	jobs = append(jobs, head)
	for i := 0; i < 15; i++ {
		j := mkJob("t", fmt.Sprintf("small%02d", i)).QueuedAt(now.Add(-time.Hour).Add(time.Duration(i)*time.Second)).
			Device(h200, 1+r.Intn(4)).Build()
		if r.Intn(4) > 0 {
			j.MaxRuntime = time.Duration(5+r.Intn(480)) * time.Minute
		}
		jobs = append(jobs, j)
	}
	s := snap(tenants, nodes, allocs, jobs...)
	s.Now = now
	return s
}

// TestPropertyBackfillNeverDelaysReservation: whatever later jobs a
// cycle admits beside a starving head's reservation, the head still fits
// at the reservation's start once the allocations that end by then are
// gone and the backfilled jobs that outlive it still hold what they took.
func TestPropertyBackfillNeverDelaysReservation(t *testing.T) {
	cases, short, outside := 0, 0, 0
	for seed := int64(0); seed < 400; seed++ {
		s := backfillSnapshot(rand.New(rand.NewSource(seed)))
		cy := newCycle(testConfig(), s)
		jobs := sortedJobs(s.Jobs)
		cy.jobs = jobs
		cy.prepare(jobs)
		var res *reservation
		var atMark *capacity
		type admitted struct {
			j     *Job
			takes []take
		}
		var after []admitted
		cy.onStarve = func(j *Job, r *reservation) { res, atMark = r, cy.cap.scratch(cy.cap.nodes) }
		cy.onAdmit = func(j *Job, takes []take) {
			if res != nil {
				after = append(after, admitted{j, append([]take(nil), takes...)})
			}
		}
		cy.admitQueue(cy.queue(jobs))
		if res == nil || res.Start.IsZero() {
			continue
		}
		cases++
		at := atMark
		for _, a := range s.Allocs {
			if end, ok := cy.allocEnd(a); ok && !end.After(res.Start) {
				fn := at.byID[a.NodeID]
				fn.cpu, fn.mem = fn.cpu+a.CPU, fn.mem+a.MemoryMB
				fn.addDev(0, a.Devices[h200])
			}
		}
		for _, ad := range after {
			rt := RuntimeOf(ad.j)
			if rt > 0 && !s.Now.Add(rt).After(res.Start) {
				short++
				continue
			}
			outside++
			for _, tk := range ad.takes {
				must.False(t, res.nodes[tk.fn.node.ID], must.Sprintf("seed %d: %s outlives the reservation on reserved node %s", seed, ad.j.ID, tk.fn.node.ID))
				fn := at.byID[tk.fn.node.ID]
				fn.cpu, fn.mem = fn.cpu-tk.cpu, fn.mem-tk.mem
				for _, d := range tk.dev {
					fn.addDev(d.idx, -d.n)
				}
			}
		}
		head := res.head
		fit := at.fit(head, cy.missing(head))
		must.True(t, fit.ok, must.Sprintf("seed %d: head no longer fits at its reservation's start %v", seed, res.Start))
	}
	t.Logf("%d reservations with a known start; %d jobs backfilled ending before it, %d outside its nodes", cases, short, outside)
	must.Greater(t, 50, cases)
	must.Positive(t, short)
	must.Positive(t, outside)
}

// sharedBackfillSnapshot is backfillSnapshot with three tenants of random
// nominal quotas (together the cluster's GPUs): the head belongs to t, as
// do half the running jobs (so that t often runs at its nominal quota or
// beyond, and the head asks past its fair share), and the other jobs
// each to a random one.
func sharedBackfillSnapshot(r *rand.Rand) *Snapshot {
	s := backfillSnapshot(r)
	gpus := int64(8 * len(s.Nodes))
	qa := 1 + r.Int63n(gpus-2)
	qb := 1 + r.Int63n(gpus-qa-1)
	s.Tenants = map[string]*Tenant{}
	for _, tn := range []*Tenant{mkTenant("t").Quota("gpu", qa).Build(), mkTenant("u").Quota("gpu", qb).Build(),
		mkTenant("v").Quota("gpu", gpus-qa-qb).Build()} {
		s.Tenants[tn.Namespace] = tn
	}
	byID := map[string]string{}
	for _, j := range s.Jobs {
		switch {
		case j.ID == "head":
		case j.State == Admitted && r.Intn(2) == 0:
			j.Namespace = "t"
		default:
			j.Namespace = []string{"t", "u", "v"}[r.Intn(3)]
		}
		byID[j.ID] = j.Namespace
	}
	for _, a := range s.Allocs {
		a.Namespace = byID[a.JobID]
	}
	return s
}

// TestPropertyBackfillDelaysOnlyOverShareHeads: with several tenants, a
// job that outlives a reservation's start on its nodes is there only
// because admitting the head would take its tenant past its fair share
// and the job, of another tenant, keeps its own within its fair share;
// the head still fits at the start beside every other backfilled job.
func TestPropertyBackfillDelaysOnlyOverShareHeads(t *testing.T) {
	cases, passed := 0, 0
	for seed := int64(0); seed < 1500; seed++ {
		s := sharedBackfillSnapshot(rand.New(rand.NewSource(seed)))
		cy := newCycle(testConfig(), s)
		jobs := sortedJobs(s.Jobs)
		cy.jobs = jobs
		cy.prepare(jobs)
		var res *reservation
		var atMark *capacity
		type admitted struct {
			j      *Job
			takes  []take
			within bool
		}
		var after []admitted
		var headUse int64 // the head's tenant's GPUs when the head starved
		cy.onStarve = func(j *Job, r *reservation) {
			res, atMark, headUse = r, cy.cap.scratch(cy.cap.nodes), cy.accts[j.Namespace].usage["gpu"]
		}
		cy.onAdmit = func(j *Job, takes []take) {
			if res == nil {
				return
			}
			acct := cy.accts[j.Namespace]
			ent := cy.entitlementOf(acct.cohort)[acct]["gpu"]
			after = append(after, admitted{j, append([]take(nil), takes...), float64(acct.usage["gpu"]) <= ent+0.5})
		}
		cy.admitQueue(cy.queue(jobs))
		if res == nil || res.Start.IsZero() {
			continue
		}
		cases++
		at := atMark
		for _, a := range s.Allocs {
			if end, ok := cy.allocEnd(a); ok && !end.After(res.Start) {
				fn := at.byID[a.NodeID]
				fn.cpu, fn.mem = fn.cpu+a.CPU, fn.mem+a.MemoryMB
				fn.addDev(0, a.Devices[h200])
			}
		}
		head, delayed := res.head, false
		// What the head's tenant holds when the head starts: what it held
		// when the head starved, less its allocations that end by then,
		// plus the head's GPUs.
		headAtStart := headUse
		for _, n := range cy.missing(head) {
			headAtStart += int64(8 * n) // the head's allocations ask for 8 GPUs each
		}
		for _, a := range s.Allocs {
			if end, ok := cy.allocEnd(a); ok && a.Namespace == head.Namespace && !end.After(res.Start) {
				headAtStart -= int64(a.Devices[h200])
			}
		}
		headAcct := cy.accts[head.Namespace]
		headEnt := cy.entitlementOf(headAcct.cohort)[headAcct]["gpu"]
		for _, ad := range after {
			if rt := RuntimeOf(ad.j); rt > 0 && !s.Now.Add(rt).After(res.Start) {
				continue
			}
			onReserved := false
			for _, tk := range ad.takes {
				onReserved = onReserved || res.nodes[tk.fn.node.ID]
			}
			if onReserved {
				must.NotEq(t, "", res.pastShare, must.Sprintf("seed %d: %s outlives the reservation of a head within its share", seed, ad.j.Key()))
				must.Greater(t, headEnt+0.5, float64(headAtStart), must.Sprintf("seed %d: the head starts within its tenant's fair share", seed))
				must.NotEq(t, head.Namespace, ad.j.Namespace, must.Sprintf("seed %d: %s passes its own tenant's head", seed, ad.j.Key()))
				must.True(t, ad.within, must.Sprintf("seed %d: %s takes its tenant past its fair share", seed, ad.j.Key()))
				passed++
				delayed = true
				continue
			}
			for _, tk := range ad.takes {
				fn := at.byID[tk.fn.node.ID]
				fn.cpu, fn.mem = fn.cpu-tk.cpu, fn.mem-tk.mem
				for _, d := range tk.dev {
					fn.addDev(d.idx, -d.n)
				}
			}
		}
		if !delayed {
			fit := at.fit(head, cy.missing(head))
			must.True(t, fit.ok, must.Sprintf("seed %d: head no longer fits at its reservation's start %v", seed, res.Start))
		}
	}
	t.Logf("%d reservations with a known start; %d jobs passed a head past its fair share", cases, passed)
	must.Greater(t, 50, cases)
	must.Positive(t, passed)
}

// TestReservationStart: the head's reservation starts when enough
// allocations of known run time have ended, on the nodes they free; a
// later job that would outlive it and fits only on those nodes waits,
// one that ends before it starts now.
func TestReservationStart(t *testing.T) {
	now := t0.Add(time.Hour)
	run := func(id, node string, gpus int, rt, age time.Duration) (*Job, *Alloc) {
		j := mkJob("t", id).State(Admitted).CPU(500).Mem(512).Device(h200, gpus).Build()
		j.MaxRuntime = rt
		a := alloc("t", id, "g", node, 500, 512, map[string]int{h200: gpus})
		a.Started, a.StartedAt = true, now.Add(-age)
		return j, a
	}
	j1, a1 := run("r1", "n1", 6, 2*time.Hour, time.Hour) // ends now+1h
	j2, a2 := run("r2", "n2", 7, 3*time.Hour, time.Hour) // ends now+2h
	head := mkJob("t", "head").QueuedAt(now.Add(-time.Hour)).Device(h200, 8).Build()
	long := mkJob("t", "long").QueuedAt(now.Add(-time.Minute)).Device(h200, 2).Build()
	long.MaxRuntime = 3 * time.Hour
	short := mkJob("t", "short").QueuedAt(now.Add(-time.Minute)).Device(h200, 2).Build()
	short.MaxRuntime = 30 * time.Minute
	s := snap([]*Tenant{mkTenant("t").Build()},
		[]*Node{mkNode("n1").Devices(h200, 8).Build(), mkNode("n2").Devices(h200, 8).Build()},
		[]*Alloc{a1, a2}, j1, j2, head, long, short)
	s.Now = now
	p := Decide(testConfig(), s)
	must.Eq(t, []Reservation{{Job: "t/head", Pool: "default", Start: now.Add(time.Hour), Nodes: []string{"n1"}}}, p.Reservations)
	must.StrContains(t, p.Verdicts["t/short"].Reason, "admitted")
	must.StrContains(t, p.Verdicts["t/long"].Reason, "holds a reservation")
	must.StrContains(t, p.Verdicts["t/long"].Reason, "may run 3h0m0s, past that")

	// Without run times the start is unknown; the head still protects
	// only the nodes it reserves: a job that fits elsewhere starts, one
	// that fits only there waits, however short.
	j1.MaxRuntime, j2.MaxRuntime = 0, 0
	tiny := mkJob("t", "tiny").QueuedAt(now.Add(-time.Minute)).Device(h200, 1).Build()
	s.Jobs = append(s.Jobs, tiny)
	p = Decide(testConfig(), s)
	must.Eq(t, []Reservation{{Job: "t/head", Pool: "default", Nodes: []string{"n1"}}}, p.Reservations)
	must.StrContains(t, p.Verdicts["t/tiny"].Reason, "admitted")
	must.StrContains(t, p.Verdicts["t/short"].Reason, "its start is unknown")
}

// overShareScene: three tenants of nominal 8 on three 8-GPU nodes. a
// runs aGPUs on n2, b 1 on n1 (ending in an hour), c 5 on n3; a's 8-GPU
// high gang has waited an hour and fits no node: it reserves n1 from
// b1's end. b's 4-GPU job and a's own 4-GPU job would outlive that start
// and fit only on n1; c's 2-GPU job fits n2 or n3. a's fair share is 12
// GPUs (b asks for 5, c for 7).
func overShareScene(aGPUs int) *scene {
	sc := threeTenants().run("a", "a2", "standard", "n2", aGPUs, 60).run("b", "b1", "standard", "n1", 1, 60).
		run("c", "c1", "standard", "n3", 5, 60)
	sc.jobs[1].MaxRuntime = 2 * time.Hour
	big := waiting("a", "big", 8, time.Hour, 0)
	big.Class = "high"
	return sc.queue(big).queue(waiting("b", "bjob", 4, 30*time.Minute, 3*time.Hour)).
		queue(waiting("a", "asmall", 4, 30*time.Minute, 3*time.Hour)).queue(waiting("c", "cjob", 2, 30*time.Minute, 3*time.Hour))
}

// TestReservationOfAnOverShareHead: a starving head whose admission
// would take its tenant past its fair share (a at its nominal 8: 16 of
// 12) holds back no job of another tenant that stays within its own: b's
// job starts on the reserved node, a's own job still waits behind its
// head. A cohort's starved head (a at 6 of its nominal 8, below
// HoldShareMax: borrowhold.go) keeps its reservation whole: b's job
// waits.
func TestReservationOfAnOverShareHead(t *testing.T) {
	now := t0.Add(10 * time.Second)
	p := Decide(testConfig(), overShareScene(8).snap())
	must.Eq(t, []Reservation{{Job: "a/big", Pool: "gpu", Start: now.Add(time.Hour), Nodes: []string{"n1"}}}, p.Reservations)
	must.Nil(t, p.BorrowHolds)
	must.Eq(t, Admitted, p.Verdicts["b/bjob"].State, must.Sprint(p.Verdicts["b/bjob"].Reason))
	must.StrContains(t, checkDetail(p.Verdicts["b/bjob"], "order"),
		"backfill: tenant b stays within its fair share, and admitting a/big, which holds the reservation, would take tenant a past its own (gpu: would use 16 when it starts, fair share 12.0)")
	must.Eq(t, Queued, p.Verdicts["a/asmall"].State)
	must.StrContains(t, p.Verdicts["a/asmall"].Reason, "waiting behind a/big")
	must.Eq(t, Admitted, p.Verdicts["c/cjob"].State, must.Sprint(p.Verdicts["c/cjob"].Reason))
	must.Nil(t, victimsOf(p))

	p = Decide(testConfig(), overShareScene(6).snap())
	must.Eq(t, []Reservation{{Job: "a/big", Pool: "gpu", Start: now.Add(time.Hour), Nodes: []string{"n1"}}}, p.Reservations)
	must.Eq(t, Queued, p.Verdicts["b/bjob"].State)
	must.StrContains(t, p.Verdicts["b/bjob"].Reason, "waiting behind a/big")
}

// checkDetail is the detail of v's check name ("" when v has none).
func checkDetail(v *Verdict, name string) string {
	for _, c := range v.Checks {
		if c.Name == name {
			return c.Detail
		}
	}
	return ""
}
