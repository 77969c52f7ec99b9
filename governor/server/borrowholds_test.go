package server

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/quota"
)

// TestPoolsShowBorrowHolds: GET /allot/v1/pools carries the latest plan's
// borrow holds beside the pools' reservations: a cohort's hold for a
// caller that may read one of its tenants, the head's name only for one
// that may read the head's namespace.
func TestPoolsShowBorrowHolds(t *testing.T) {
	start := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	p := samplePlan()
	// ml and secret share cohort default; vault is alone in private.
	p.Tenants[1].Cohort = "default"
	p.Tenants = append(p.Tenants, engine.TenantStatus{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "vault", Cohort: "private"}}})
	p.BorrowHolds = []engine.BorrowHold{
		{Job: "secret/gang", Cohort: "default", Start: start},
		{Job: "vault/head", Cohort: "private"},
	}
	_, srv := testServer(t, p, true, nil)
	pools := func(token string) []allotapi.BorrowHold {
		got, err := (&allotapi.Client{Address: srv.URL, Token: token}).Pools(context.Background())
		must.NoError(t, err, must.Sprint(token))
		return got.BorrowHolds
	}
	// ml reads cohort default (through ml), not the head's namespace, and
	// nothing of cohort private.
	must.Eq(t, []allotapi.BorrowHold{{Cohort: "default", Job: auth.Hidden, Start: &start}}, pools("ml"))
	for _, token := range []string{"root", "off"} {
		must.Eq(t, []allotapi.BorrowHold{{Cohort: "default", Job: "secret/gang", Start: &start},
			{Cohort: "private", Job: "vault/head"}}, pools(token), must.Sprint(token))
	}
}

// TestPoolsWithoutBorrowHolds: no hold is an empty list, not null.
func TestPoolsWithoutBorrowHolds(t *testing.T) {
	got := BorrowHoldsOf(nil, samplePlan().Tenants, func(string) bool { return true })
	must.NotNil(t, got)
	must.SliceEmpty(t, got)
}
