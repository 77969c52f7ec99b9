package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/quota"
)

// fakeClock is a settable clock for the store.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func jobEvent(j *api.Job, idx uint64) Event {
	return Event{Topic: api.TopicJob, Type: "JobRegistered", Index: idx, Payload: Payload{Job: &wireJob{Job: j}}}
}

func allocEvent(a *api.Allocation, idx uint64) Event {
	return Event{Topic: api.TopicAllocation, Type: "AllocationUpdated", Index: idx, Payload: Payload{Allocation: &wireAlloc{Allocation: a}}}
}

func evalEvent(ev *api.Evaluation, idx uint64) Event {
	return Event{Topic: api.TopicEvaluation, Type: "EvaluationUpdated", Index: idx, Payload: Payload{Evaluation: &wireEval{Evaluation: ev}}}
}

// sizes reports the length of every map the store keeps per job or
// allocation.
func (s *Store) sizes() map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return map[string]int{"jobs": len(s.jobs), "allocs": len(s.allocs), "ckpt": len(s.ckpt), "deregAt": len(s.deregAt),
		"deadAt": len(s.deadAt), "reserved": len(s.reserved), "verify": len(s.verify)}
}

func TestAudit20_LongChurnLeavesTheStoreBounded(t *testing.T) {
	clock := &fakeClock{now: metaNow}
	s := NewStore(quota.NewBook(nil), nil)
	s.SetClock(clock.Now)
	idx := uint64(1)
	next := func() uint64 { idx++; return idx }
	const jobs = 3000
	for i := 0; i < jobs; i++ {
		id := fmt.Sprintf("batch-%d", i)
		j := api.NewBatchJob(id, id, "global", 50)
		j.Namespace, j.Status = pointerTo("ml"), pointerTo("running")
		reg := next()
		j.JobModifyIndex = &reg
		a := &api.Allocation{ID: "a-" + id, Namespace: "ml", JobID: id, TaskGroup: "g", NodeID: "n1", CreateIndex: next(),
			DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning,
			TaskStates: map[string]*api.TaskState{"t": {Events: []*api.TaskEvent{savedEvent(clock.now, "/c")}}}}
		done, dead := *a, *j
		done.ClientStatus, dead.Status = api.AllocClientStatusComplete, pointerTo("dead")
		events := []Event{jobEvent(j, reg), allocEvent(a, a.CreateIndex), allocEvent(&done, next()), jobEvent(&dead, next())}
		switch i % 3 {
		case 0: // stopped by its user: a deregister, the job stays until Nomad collects it
			stop := next()
			dead.JobModifyIndex, dead.Stop = &stop, pointerTo(true)
			events = append(events, jobEvent(&dead, stop), evalEvent(&api.Evaluation{ID: "e-" + id, Namespace: "ml", JobID: id, TriggeredBy: "job-deregister", JobModifyIndex: stop}, stop))
		case 1: // purged: the watcher deletes it after checking Nomad
			events = append(events, evalEvent(&api.Evaluation{ID: "e-" + id, Namespace: "ml", JobID: id, TriggeredBy: "job-deregister", JobModifyIndex: next()}, idx))
		}
		must.NoError(t, s.Apply(&Frame{Index: idx, Events: events}))
		for _, key := range s.TakeVerify() {
			if i%3 == 1 {
				ns, id := splitKey(key)
				s.DeleteJob(ns, id)
			}
		}
		clock.now = clock.now.Add(3 * time.Second) // 3000 jobs over 2.5 hours
	}
	got := s.sizes()
	t.Logf("after the churn: %v", got)
	// Only the last hour's finished jobs are kept (1200 of 3000 jobs, two
	// thirds of them not purged), with their allocations gone: they are
	// finished, so none of them can count.
	must.LessEq(t, 820, got["jobs"], must.Sprintf("%v", got))
	must.LessEq(t, 820, got["deadAt"], must.Sprintf("%v", got))
	must.LessEq(t, 410, got["deregAt"], must.Sprintf("%v", got))
	must.LessEq(t, 60, got["allocs"], must.Sprintf("%v", got))
	must.Eq(t, got["allocs"], got["ckpt"], must.Sprintf("%v", got))

	clock.now = clock.now.Add(DeadJobRetention + time.Minute)
	s.Prune()
	for name, n := range s.sizes() {
		must.Zero(t, n, must.Sprintf("%s after every job finished long ago", name))
	}
}

func TestAudit20_RunningWorkIsKept(t *testing.T) {
	clock := &fakeClock{now: metaNow}
	s := NewStore(nil, nil)
	s.SetClock(clock.Now)
	j := api.NewBatchJob("run", "run", "global", 50)
	j.Namespace, j.Status, j.JobModifyIndex = pointerTo("ml"), pointerTo("running"), pointerTo(uint64(10))
	live := &api.Allocation{ID: "live", Namespace: "ml", JobID: "run", TaskGroup: "g", CreateIndex: 11,
		DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning}
	done := *live
	done.ID, done.ClientStatus = "done", api.AllocClientStatusComplete
	old := done
	old.ID, old.CreateIndex = "old", 5 // an earlier version's run
	s.Reset(&Initial{Jobs: []*api.Job{j}, Allocs: []*api.Allocation{live, &done, &old}})
	clock.now = clock.now.Add(10 * DeadJobRetention)
	s.Prune()
	snap := s.Snapshot(clock.now)
	must.SliceLen(t, 1, snap.Jobs)
	ids := map[string]bool{}
	for _, a := range snap.Allocs {
		ids[a.ID] = true
	}
	must.Eq(t, map[string]bool{"live": true, "done": true}, ids, must.Sprint("the finished allocation of the running version still counts as placed"))
}

// fakeNomad serves the listing endpoints NomadSource.Initial reads.
func fakeNomad(t *testing.T, jobs []*api.Job, evals map[string][]*api.Evaluation) *api.Client {
	t.Helper()
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("X-Nomad-Index", "100")
		w.Header().Set("X-Nomad-KnownLeader", "true")
		w.Header().Set("X-Nomad-LastContact", "0")
		must.NoError(t, json.NewEncoder(w).Encode(v))
	}
	mux.HandleFunc("/v1/nodes", func(w http.ResponseWriter, _ *http.Request) { reply(w, []any{}) })
	mux.HandleFunc("/v1/allocations", func(w http.ResponseWriter, _ *http.Request) { reply(w, []any{}) })
	mux.HandleFunc("/v1/evaluations", func(w http.ResponseWriter, _ *http.Request) { reply(w, []any{}) })
	mux.HandleFunc("/v1/jobs", func(w http.ResponseWriter, _ *http.Request) {
		var stubs []api.JobListStub
		for _, j := range jobs {
			stubs = append(stubs, api.JobListStub{ID: *j.ID, Namespace: *j.Namespace})
		}
		reply(w, stubs)
	})
	for _, j := range jobs {
		j := j
		mux.HandleFunc("/v1/job/"+*j.ID, func(w http.ResponseWriter, _ *http.Request) { reply(w, j) })
		mux.HandleFunc("/v1/job/"+*j.ID+"/evaluations", func(w http.ResponseWriter, _ *http.Request) { reply(w, evals[*j.ID]) })
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := api.NewClient(&api.Config{Address: srv.URL})
	must.NoError(t, err)
	return c
}

func TestAudit21_StopWhileGovernorDownIsNotRestarted(t *testing.T) {
	sealer := testSealer(t)
	hold := func(id string) *api.Job {
		return sealedJob(t, sealer, id, func(j *api.Job) error { return sealer.Hold(j, jobmeta.Record{}, jobmeta.Stamp{Now: metaNow}) })
	}
	// "stopped": held at index 10, then `nomad job stop` while the governor
	// was down: Nomad re-stores the job (same meta and submit time) at the
	// stop's index, which its job-deregister evaluation carries.
	stopped, waiting := hold("stopped"), hold("waiting")
	stopped.JobModifyIndex = pointerTo(uint64(12))
	evals := map[string][]*api.Evaluation{
		"stopped": {{ID: "e1", JobID: "stopped", TriggeredBy: "job-register", JobModifyIndex: 10},
			{ID: "e2", JobID: "stopped", TriggeredBy: "job-deregister", JobModifyIndex: 12}},
		"waiting": {{ID: "e3", JobID: "waiting", TriggeredBy: "job-deregister", JobModifyIndex: 4}, // a stop before it was queued again
			{ID: "e4", JobID: "waiting", TriggeredBy: "job-register", JobModifyIndex: 10}},
	}
	in, err := (&NomadSource{Client: fakeNomad(t, []*api.Job{stopped, waiting}, evals)}).Initial(context.Background())
	must.NoError(t, err)
	must.Eq(t, map[string]uint64{"ml/stopped": 12, "ml/waiting": 4}, in.Deregs)

	s := NewStore(quota.NewBook(nil), nil)
	s.UseSealer(sealer)
	s.Reset(in)
	j, ok := s.Job("ml", "stopped")
	must.True(t, ok)
	must.Eq(t, engine.Queued, j.State)
	must.True(t, j.StoppedByUser, must.Sprint("the user's stop is recognised from the listing"))
	j, _ = s.Job("ml", "waiting")
	must.False(t, j.StoppedByUser, must.Sprint("control: a stop older than the held version is not"))

	p := engine.Decide(engine.Config{Classes: map[string]engine.Class{"standard": {Priority: 50}}},
		&engine.Snapshot{Now: metaNow, Tenants: map[string]*engine.Tenant{"ml": {Tenant: quota.Tenant{Namespace: "ml", Cohort: "default", Weight: 1}}},
			Nodes: []*engine.Node{{ID: "n1", Pool: "default", Ready: true, CPU: 8000, MemoryMB: 16384}}, Jobs: s.Snapshot(metaNow).Jobs})
	d, ok := p.Decision("ml", "stopped")
	must.True(t, ok)
	must.Eq(t, engine.Forget, d.Action, must.Sprint("the governor leaves it stopped"))
	d, _ = p.Decision("ml", "waiting")
	must.Eq(t, engine.Admit, d.Action)
}

func TestAudit24_ResyncKeepsInFlightReservations(t *testing.T) {
	clock := &fakeClock{now: metaNow}
	s := NewStore(nil, nil)
	s.SetClock(clock.Now)
	other := api.NewBatchJob("other", "other", "global", 50)
	other.Namespace, other.JobModifyIndex = pointerTo("ml"), pointerTo(uint64(5))
	s.Reset(&Initial{Jobs: []*api.Job{other}})

	res := &engine.Job{Namespace: "ml", ID: "new", State: engine.Admitted, Dead: true, // a caller-set "Status":"dead"
		Groups: []engine.Group{{Name: "g", Count: 1, CPU: 100, MemoryMB: 64}}}
	must.Nil(t, s.PutEngineJob(res))
	j, _ := s.Job("ml", "new")
	must.False(t, j.Dead, must.Sprint("a reservation is never dead"))
	must.True(t, j.Reserved)

	s.Reset(&Initial{Jobs: []*api.Job{other}}) // a resync before Nomad has the job
	j, ok := s.Job("ml", "new")
	must.True(t, ok, must.Sprint("the resync keeps the in-flight reservation"))
	must.True(t, j.Reserved)

	stored := api.NewBatchJob("new", "new", "global", 50)
	stored.Namespace, stored.JobModifyIndex, stored.Status = pointerTo("ml"), pointerTo(uint64(7)), pointerTo("pending")
	must.NoError(t, s.Apply(&Frame{Index: 7, Events: []Event{jobEvent(stored, 7)}}))
	j, _ = s.Job("ml", "new")
	must.False(t, j.Reserved, must.Sprint("Nomad's version ends the reservation"))
	must.Zero(t, s.sizes()["reserved"])

	// A reservation Nomad never confirms expires.
	must.Nil(t, s.PutEngineJob(&engine.Job{Namespace: "ml", ID: "lost", State: engine.Admitted}))
	clock.now = clock.now.Add(ReservationTTL + time.Second)
	s.Prune()
	_, ok = s.Job("ml", "lost")
	must.False(t, ok)
}

func TestAudit24_UpdateReservationSurvivesTheOldVersionsEvents(t *testing.T) {
	s := NewStore(nil, nil)
	run := api.NewBatchJob("run", "run", "global", 50)
	run.Namespace, run.JobModifyIndex, run.Status = pointerTo("ml"), pointerTo(uint64(5)), pointerTo("running")
	s.Reset(&Initial{Jobs: []*api.Job{run}})
	prev := s.PutEngineJob(&engine.Job{Namespace: "ml", ID: "run", State: engine.Admitted, Version: 5,
		Groups: []engine.Group{{Name: "g", Count: 1, CPU: 100, MemoryMB: 64}}})
	must.NotNil(t, prev)
	must.NoError(t, s.Apply(&Frame{Index: 6, Events: []Event{jobEvent(run, 6)}})) // the old version again (a status change)
	j, _ := s.Job("ml", "run")
	must.True(t, j.Reserved, must.Sprint("the old version does not replace the reservation of the new one"))
}
