package cluster

import (
	"sort"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/quota"
)

// Nomad 1.6.1 counts an allocation's resources until its client status
// is terminal, whatever its desired status (issue 15's phantom capacity).
func TestConvertAllocKeepsStoppingAllocations(t *testing.T) {
	cases := map[string]struct {
		desired, client string
		kept            bool
		live, stopping  bool
	}{
		"running":                  {desired: "run", client: "running", kept: true, live: true},
		"finished under run":       {desired: "run", client: "complete", kept: true},
		"stop planned, still runs": {desired: "stop", client: "running", kept: true, stopping: true},
		"stop planned, pending":    {desired: "stop", client: "pending", kept: true, stopping: true},
		"evicted, still runs":      {desired: "evict", client: "running", kept: true, stopping: true},
		"stopped and finished":     {desired: "stop", client: "complete"},
		"stopped and failed":       {desired: "stop", client: "failed"},
		"evicted and lost":         {desired: "evict", client: "lost"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := ConvertAlloc(&api.Allocation{ID: "a", Namespace: "ml", JobID: "j", NodeID: "n1",
				DesiredStatus: tc.desired, ClientStatus: tc.client})
			if !tc.kept {
				must.Nil(t, c)
				return
			}
			must.NotNil(t, c)
			must.Eq(t, tc.live, c.Live)
			must.Eq(t, tc.stopping, c.Stopping)
		})
	}
}

func TestStoppingAllocationIsNotPruned(t *testing.T) {
	s := NewStore(nil, nil)
	s.Reset(&Initial{Allocs: []*api.Allocation{{ID: "a", Namespace: "ml", JobID: "gone", NodeID: "n1",
		DesiredStatus: "stop", ClientStatus: "running"}}})
	s.Prune()
	must.SliceLen(t, 1, s.Snapshot(metaNow).Allocs, must.Sprint("it holds its node's resources until its client stops it"))
}

// The job event of a registration carries the status Nomad computed
// before the registration's evaluation was stored.
func TestRegistrationStatusDeadIsNotAnEnd(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	cases := map[string]struct {
		stop        bool
		modify, jmi uint64
		dead        bool
	}{
		"registered to run, status of its own transaction": {modify: 20, jmi: 20},
		"finished later": {modify: 25, jmi: 20, dead: true},
		"stopped":        {stop: true, modify: 20, jmi: 20, dead: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := &api.Job{ID: pointerTo("j"), Status: pointerTo("dead"), Stop: pointerTo(tc.stop), ModifyIndex: u(tc.modify), JobModifyIndex: u(tc.jmi)}
			must.Eq(t, tc.dead, ConvertJob(j).Dead)
		})
	}
}

func TestBlockedEvaluationsOfTheCurrentVersion(t *testing.T) {
	s := NewStore(nil, nil)
	job := &api.Job{ID: pointerTo("j"), Namespace: pointerTo("ml"), Type: pointerTo("batch"), JobModifyIndex: pointerTo(uint64(20)),
		TaskGroups: []*api.TaskGroup{{Name: pointerTo("g"), Count: pointerTo(1)}}}
	s.Reset(&Initial{Jobs: []*api.Job{job}, Blocked: []*api.Evaluation{{ID: "old", Namespace: "ml", JobID: "j", Status: "blocked", JobModifyIndex: 12}}})
	must.False(t, s.Blocked("ml", "j"), must.Sprint("a blocked evaluation of an earlier version says nothing of this one"))
	s.mu.Lock()
	s.noteEval(&api.Evaluation{ID: "e1", Namespace: "ml", JobID: "j", Status: "blocked", JobModifyIndex: 20})
	s.mu.Unlock()
	must.True(t, s.Blocked("ml", "j"))
	snap := s.Snapshot(metaNow)
	must.True(t, snap.Jobs[0].Blocked)
	got, _ := s.Job("ml", "j")
	must.False(t, got.Blocked, must.Sprint("the stored entry is never mutated"))
	s.mu.Lock()
	s.noteEval(&api.Evaluation{ID: "e1", Namespace: "ml", JobID: "j", Status: "complete", JobModifyIndex: 20})
	s.mu.Unlock()
	must.False(t, s.Blocked("ml", "j"))
	s.DeleteJob("ml", "j")
	must.MapEmpty(t, s.blocked)
}

// A governor whose governed_namespaces leave a namespace out never
// releases the jobs another governor holds there (TestE2E_Ledger's
// ledger-only governor admitted them: "namespace ... is no longer
// governed").
func TestHeldJobsOutsideGovernedNamespacesAreNotThisGovernorsToRelease(t *testing.T) {
	sealer := testSealer(t)
	held := func(ns string) *api.Job {
		j := sealedJob(t, sealer, "held", func(j *api.Job) error { return sealer.Hold(j, jobmeta.Record{}, jobmeta.Stamp{Now: metaNow}) })
		j.Namespace = pointerTo(ns)
		must.NoError(t, sealer.Hold(j, jobmeta.Record{}, jobmeta.Stamp{Now: metaNow}))
		return j
	}
	// governed_namespaces leaves "theirs" out; "plain" may be governed but
	// has no allot.* meta (any more).
	s := NewStore(quota.NewBook(nil), func(ns string) bool { return ns != "theirs" })
	s.UseSealer(sealer)
	s.SetNamespaces([]*api.Namespace{{Name: "mine", Meta: map[string]string{"allot.quota.gpu": "4"}},
		{Name: "theirs", Meta: map[string]string{"allot.quota.gpu": "4"}}, {Name: "plain"}})
	s.Reset(&Initial{Jobs: []*api.Job{held("mine"), held("theirs"), held("plain")}})
	snap := s.Snapshot(metaNow)
	var keys []string
	for _, j := range snap.Jobs {
		keys = append(keys, j.Key())
	}
	sort.Strings(keys)
	must.Eq(t, []string{"mine/held", "plain/held"}, keys)
	p := engine.Decide(engine.Config{Classes: map[string]engine.Class{"standard": {Priority: 50}}}, snap)
	acts := map[string]engine.Action{}
	for _, d := range p.Decisions {
		acts[d.Namespace] = d.Action
	}
	must.MapNotContainsKey(t, acts, "theirs", must.Sprint("another governor's hold stays"))
	must.Eq(t, engine.Admit, acts["plain"], must.Sprint("control: a namespace that lost its allot.* meta is released"))
}
