package server

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/reconcile"
)

func TestClassesByPriority(t *testing.T) {
	got, err := newDecisionServer(t, nil).Classes(context.Background())
	must.NoError(t, err)
	must.Eq(t, []allotapi.Class{
		{Name: "production", Priority: 90, Restricted: true},
		{Name: "standard", Priority: 50, Preemptible: true},
		{Name: "also-low", Priority: 30},
		{Name: "low", Priority: 30, Preemptible: true},
	}, got.Classes)
}

func TestDecisionsNewestFirstAndFiltered(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	j := &reconcile.Journal{}
	j.Add(reconcile.Record{Time: at, Kind: "preemption", Namespace: "ml", JobID: "boss", Class: "standard", Cause: "reclaim",
		Reason: "tenant ml reclaims", Victims: []engine.Victim{
			{Namespace: "secret", JobID: "s1", Class: "low", LostWork: 90 * time.Second},
			{Namespace: "ml", JobID: "own", Class: "low", LostWork: time.Second},
		}})
	j.Add(reconcile.Record{Time: at.Add(time.Minute), Kind: "requeue", Namespace: "secret", JobID: "gang", Cause: "gang-timeout"})
	j.Add(reconcile.Record{Time: at.Add(2 * time.Minute), Kind: "requeue", Namespace: "ml", JobID: "gang", Cause: "gang-timeout", Reason: "gang timeout"})
	got, err := newDecisionServer(t, j).Decisions(context.Background())
	must.NoError(t, err)
	must.Eq(t, []allotapi.Decision{
		{Time: at.Add(2 * time.Minute), Kind: "requeue", Namespace: "ml", JobID: "gang", Cause: "gang-timeout", Reason: "gang timeout"},
		{Time: at, Kind: "preemption", Namespace: "ml", JobID: "boss", Class: "standard", Cause: "reclaim", Reason: "tenant ml reclaims",
			Victims: []allotapi.Victim{{Namespace: "(hidden)", JobID: "(hidden)"}, {Namespace: "ml", JobID: "own", Class: "low", LostWorkSeconds: 1}}},
	}, got.Decisions)
}

func TestDecisionsEmptyAndDenied(t *testing.T) {
	c := newDecisionServer(t, &reconcile.Journal{})
	got, err := c.Decisions(context.Background())
	must.NoError(t, err)
	must.SliceEmpty(t, got.Decisions)
	c.Token = "denied"
	_, err = c.Decisions(context.Background())
	must.ErrorContains(t, err, "ACL token not found")
}
