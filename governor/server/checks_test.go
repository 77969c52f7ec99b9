package server

import (
	"net/http"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/engine"
)

// Verdicts that share one failing check (the engine's memo) get the same
// structured check; a verdict whose reason is not that check's text gets
// none, even when it shares the check.
func TestReasonChecksShareTheEnginesMemo(t *testing.T) {
	shared := []engine.Check{{Name: "class", OK: true, Detail: "class standard"},
		{Name: "quota", Tenant: "ml", Cohort: "c", Amounts: []engine.Amount{{Resource: "gpu", Need: 2, Used: 4, Cap: 4, Borrowable: 0, Over: true}}}}
	text := "quota: needs 2 gpu; tenant ml uses 4 of quota 4 and cohort c can lend 0 more"
	a := engine.Verdict{Namespace: "ml", JobID: "a", Reason: text, Checks: shared}
	b := engine.Verdict{Namespace: "ml", JobID: "b", Reason: text, Checks: shared}
	c := engine.Verdict{Namespace: "ml", JobID: "c", Reason: "fits now; the next cycle admits it", Checks: shared}
	d := engine.Verdict{Namespace: "ml", JobID: "d", Reason: "quota: something else", Checks: shared}
	e := engine.Verdict{Namespace: "ml", JobID: "e", Reason: "class: class standard", Checks: shared[:1]}
	rcs := newReasonChecks(auth.Redactor{})
	want := &allotapi.Check{Name: "quota", Detail: text[len("quota: "):], Tenant: "ml", Cohort: "c",
		Amounts: []allotapi.Amount{{Resource: "gpu", Need: 2, Used: 4, Cap: 4, Borrowable: 0, Over: true}}}
	must.Eq(t, want, rcs.of(&a))
	must.True(t, rcs.of(&a) == rcs.of(&b), must.Sprint("converted once"))
	must.Nil(t, rcs.of(&c))
	must.Nil(t, rcs.of(&d))
	must.Nil(t, rcs.of(&e), must.Sprint("no failing check"))
}

// The console's per-row lookup gives the API's check while the job's
// reason is the one the page shows, and nothing once it changed or for a
// namespace the caller may not read.
func TestReasonCheckForARow(t *testing.T) {
	s, _ := testServer(t, samplePlan(), true, nil)
	c, err := fakeAuth{t}.Authenticate(&http.Request{Header: http.Header{"X-Nomad-Token": {"ml"}}})
	must.NoError(t, err)
	must.Eq(t, &limitFails, s.reasonCheck(c, "ml", "big.Job_1", "limit: needs 4 gpu; tenant ml uses 8 of limit 8"))
	must.Nil(t, s.reasonCheck(c, "ml", "big.Job_1", "limit: an older reason"))
	must.Nil(t, s.reasonCheck(c, "ml", "no-such-job", "limit: needs 4 gpu; tenant ml uses 8 of limit 8"))
	must.Nil(t, s.reasonCheck(c, "secret", "x", "fit: none"))
}
