package engine

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestMoveHoldKeepsTheMovesNodes: the cycle after a move emptied n2 for
// a/gang (Snapshot.MoveHolds), the gang fits n2 at the start of the walk
// and so holds no reservation of its own; b/hi, a higher class the walk
// meets first, fits only there. With the hold the gang starts on n2 and
// b/hi waits behind it; without (or once the hold is stale, or the gang
// queued again after it) b/hi takes n2 and the move was for nothing.
func TestMoveHoldKeepsTheMovesNodes(t *testing.T) {
	now := t0.Add(10 * time.Second)
	cases := map[string]struct {
		hold     *MoveHold
		admitted []string
	}{
		"held: the gang starts on the emptied node":  {hold: &MoveHold{At: now.Add(-30 * time.Second), Nodes: []string{"n2"}}, admitted: []string{"a/gang"}},
		"no hold: the walk's order decides":          {admitted: []string{"b/hi"}},
		"a hold older than 5 minutes is ignored":     {hold: &MoveHold{At: now.Add(-6 * time.Minute), Nodes: []string{"n2"}}, admitted: []string{"b/hi"}},
		"a hold from before the head queued is void": {hold: &MoveHold{At: now.Add(-25 * time.Minute), Nodes: []string{"n2"}}, admitted: []string{"b/hi"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc := &scene{tenants: []*Tenant{mkTenant("a").Quota("gpu", 16).Build(), mkTenant("b").Quota("gpu", 16).Build()},
				nodes: []*Node{gpuNode("n1", 8), gpuNode("n2", 8)}}
			sc.run("b", "b1", "standard", "n1", 6, 1)
			gang := gpuJob("a", "gang", "standard", 8)
			gang.QueuedAt = now.Add(-20 * time.Minute)
			hi := gpuJob("b", "hi", "high", 3)
			hi.QueuedAt = now.Add(-time.Minute)
			s := sc.queue(gang).queue(hi).snap()
			if tc.hold != nil {
				s.MoveHolds = map[string]MoveHold{"a/gang": *tc.hold}
			}
			p := Decide(testConfig(), s)
			var got []string
			for _, d := range p.Decisions {
				if d.Action == Admit {
					got = append(got, d.Namespace+"/"+d.JobID)
				}
			}
			must.Eq(t, tc.admitted, got, must.Sprint(p.Verdicts["a/gang"].Reason, " | ", p.Verdicts["b/hi"].Reason))
			if tc.hold != nil && tc.admitted[0] == "a/gang" {
				must.StrContains(t, p.Verdicts["b/hi"].Reason, "waiting behind a/gang")
				must.MapEmpty(t, p.MoveHolds, must.Sprint("the head is admitted: no hold to carry"))
			}
		})
	}
}

// TestMoveHoldIsCarried: a move's plan holds the emptied nodes for its
// head (Plan.MoveHolds), and a later plan carries the hold while the head
// is queued and the move is at most 5 minutes old (meanwhile the head's
// reservation starts now, so no second move is made for it).
func TestMoveHoldIsCarried(t *testing.T) {
	sc := moveScene(1)
	p := Decide(testConfig(), sc.snap())
	must.MapLen(t, 1, p.MoveHolds, must.Sprint(p.Preemptions))
	var key string
	var hold MoveHold
	for k, h := range p.MoveHolds {
		key, hold = k, h
	}
	must.Eq(t, CauseMove, onlyPreemption(t, p, CauseMove).Cause)
	must.Eq(t, key, p.Preemptions[0].Namespace+"/"+p.Preemptions[0].JobID)
	must.SliceNotEmpty(t, hold.Nodes)
	s := sc.snap()
	s.MoveHolds = p.MoveHolds
	s.Now = hold.At.Add(2 * time.Minute)
	must.Eq(t, hold, Decide(testConfig(), s).MoveHolds[key], must.Sprint("carried while queued"))
	s.Now = hold.At.Add(6 * time.Minute)
	// Older than 5 minutes the hold is dropped; the jobs it counted on
	// still run here, so the head's own reservation moves them again.
	must.Eq(t, s.Now, Decide(testConfig(), s).MoveHolds[key].At, must.Sprint("not the stale hold"))
}
