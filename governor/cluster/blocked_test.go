package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// applyEval applies an event-stream frame holding evaluation ev, decoded
// as the watcher decodes it.
func applyEval(t *testing.T, s *Store, index uint64, ev *api.Evaluation) {
	t.Helper()
	line, err := json.Marshal(map[string]any{"Index": index, "Events": []map[string]any{{
		"Topic": api.TopicEvaluation, "Type": "EvaluationUpdated", "Index": index, "Payload": map[string]any{"Evaluation": ev}}}})
	must.NoError(t, err)
	ch := make(chan *Frame, 2)
	ReadFrames(context.Background(), bytes.NewReader(append(line, '\n')), ch)
	f := <-ch
	must.NoError(t, f.Err)
	must.NoError(t, s.Apply(f))
}

// A blocked evaluation changes what the cycle reads (Job.Blocked in every
// Snapshot) but no accounting, so it does not move Gen, which tells the
// proxy when its admission base must be rebuilt (issue 14 item 5).
func TestBlockedEvaluationsLeaveGenAndReachTheSnapshot(t *testing.T) {
	s := NewStore(nil, nil)
	job := &api.Job{ID: pointerTo("j"), Namespace: pointerTo("ml"), Type: pointerTo("batch"), JobModifyIndex: pointerTo(uint64(20)),
		TaskGroups: []*api.TaskGroup{{Name: pointerTo("g"), Count: pointerTo(1)}}}
	s.Reset(&Initial{Index: 20, Jobs: []*api.Job{job}})
	gen := s.Gen()
	blocked := func(id string) bool {
		for _, j := range s.Snapshot(metaNow).Jobs {
			if j.ID == id {
				return j.Blocked
			}
		}
		t.Fatalf("job %s not in the snapshot", id)
		return false
	}
	steps := []struct {
		ev      *api.Evaluation
		blocked bool
	}{
		{&api.Evaluation{ID: "e1", Namespace: "ml", JobID: "j", Status: api.EvalStatusBlocked, JobModifyIndex: 20}, true},
		{&api.Evaluation{ID: "e1", Namespace: "ml", JobID: "j", Status: api.EvalStatusBlocked, JobModifyIndex: 20}, true},
		{&api.Evaluation{ID: "e9", Namespace: "other", JobID: "k", Status: api.EvalStatusBlocked, JobModifyIndex: 3}, true},
		{&api.Evaluation{ID: "e1", Namespace: "ml", JobID: "j", Status: api.EvalStatusComplete, JobModifyIndex: 20}, false},
	}
	for i, st := range steps {
		select {
		case <-s.Changed():
		default:
		}
		applyEval(t, s, uint64(21+i), st.ev)
		must.Eq(t, st.blocked, blocked("j"), must.Sprintf("step %d", i))
		must.Eq(t, gen, s.Gen(), must.Sprintf("step %d: the generation stays", i))
		select {
		case <-s.Changed():
		default:
			t.Fatalf("step %d: the frame signals a change, so a cycle runs", i)
		}
	}
}
