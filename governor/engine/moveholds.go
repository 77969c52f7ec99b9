package engine

import (
	"sort"
	"strings"
	"time"
)

// The move's promise: a move (move.go) requeues jobs so that its head
// fits on the nodes they leave, and closes those nodes to the rest of
// its cycle. The head starts a cycle later, once the moved jobs have
// stopped; by then it may fit free capacity at the start of the walk,
// so it is no longer its pool's starving head with a reservation, and a
// job the walk meets first could take the nodes the move emptied: the
// moved jobs would then have been stopped for nothing (the property run
// over forty times TestPropertyMoveNoChurn's seeds found it, seed
// 201877).
//
// The engine is pure, so the promise travels with the caller, as the
// claim clock does (claims.go): Plan.MoveHolds holds, by head, the nodes
// its move emptied and when; the next cycles read it back from
// Snapshot.MoveHolds and, while the head is queued and the move is at
// most reclaimWindow old, reserve those nodes for it before the walk
// (start now): a job the walk meets first starts only beside them.

// MoveHold is the nodes a move emptied for its head, and when.
type MoveHold struct {
	At    time.Time
	Nodes []string
}

// noteMoveHold records that a move empties nodes for head j now.
func (cy *cycle) noteMoveHold(j *Job, nodes []string) {
	if cy.pre.moveHolds == nil {
		cy.pre.moveHolds = map[string]MoveHold{}
	}
	ids := append([]string(nil), nodes...)
	sort.Strings(ids)
	cy.pre.moveHolds[j.Key()] = MoveHold{At: cy.s.Now, Nodes: ids}
}

// carriedMoveHold returns the snapshot's hold for queued job j when it
// is believable and at most reclaimWindow old.
func (cy *cycle) carriedMoveHold(j *Job) (MoveHold, bool) {
	h, ok := cy.s.MoveHolds[j.Key()]
	if !ok || j.State != Queued || h.At.After(cy.s.Now) || cy.s.Now.Sub(h.At) > reclaimWindow || h.At.Before(j.QueuedAt) {
		return MoveHold{}, false
	}
	return h, true
}

// holdMoves reserves, before the walk, the nodes each carried move
// emptied for its still queued head (the first head by key per pool).
func (cy *cycle) holdMoves() {
	keys := make([]string, 0, len(cy.s.MoveHolds))
	for key := range cy.s.MoveHolds {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	held := map[string]bool{}
	for _, key := range keys {
		j := cy.jobByKey(key)
		if j == nil {
			continue
		}
		h, ok := cy.carriedMoveHold(j)
		if !ok || held[j.Pool()] {
			continue
		}
		held[j.Pool()] = true
		r := &reservation{head: j, Start: cy.s.Now, nodes: map[string]bool{}}
		for _, id := range h.Nodes {
			r.nodes[id] = true
		}
		r.Nodes = append([]string(nil), h.Nodes...)
		cy.setStarving(j, r)
	}
}

// jobByKey returns the snapshot's job "ns/id", nil when there is none.
func (cy *cycle) jobByKey(key string) *Job {
	ns, id, ok := strings.Cut(key, "/")
	if !ok {
		return nil
	}
	return cy.jobByID(ns, id)
}

// planMoveHolds hands the carried holds still valid and this cycle's
// moves to the next cycle (Plan.MoveHolds); a head the plan admits needs
// none.
func (cy *cycle) planMoveHolds() {
	out := map[string]MoveHold{}
	for key := range cy.s.MoveHolds {
		if j := cy.queuedJob(key); j != nil {
			if h, ok := cy.carriedMoveHold(j); ok {
				out[key] = h
			}
		}
	}
	for key, h := range cy.pre.moveHolds {
		if cy.queuedJob(key) != nil {
			out[key] = h
		}
	}
	if len(out) > 0 {
		cy.plan.MoveHolds = out
	}
}
