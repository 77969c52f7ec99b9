//go:build e2e

package console_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	chrome "github.com/allot-sh/allot/internal/browser"
)

// TestE2E_OverviewBorrowHolds renders the overview's borrow holds in
// headless Chromium (a real cluster shows none unless a tenant starves
// for longer than the starvation timeout): the table reads as the API
// says, with no console error and no accessibility problem, for a token
// that may read the head's namespace and for one that may not.
func TestE2E_OverviewBorrowHolds(t *testing.T) {
	p := testPlan()
	p.BorrowHolds = []engine.BorrowHold{{Job: "secret/x", Cohort: "default", Start: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)}}
	srv, _ := newGovernor(t, p, false, false, liveCluster)
	b := chrome.New(t, chrome.Options{})
	for _, c := range []struct{ token, head string }{{"root", "secret/x"}, {"ml", "a job you may not read"}} {
		status, err := b.Navigate(srv.URL + "/ui/signin")
		must.NoError(t, err)
		must.Eq(t, 200, status)
		status, err = b.Submit(`form[action="/ui/signin"]`, map[string]string{"token": c.token})
		must.NoError(t, err)
		must.Eq(t, 200, status, must.Sprint(c.token))
		// The sign-in page's load asked for /favicon.ico, which this
		// server answers 404 (governor/e2e's console test also clears
		// the errors before each view).
		b.ClearErrors()
		status, err = b.Navigate(srv.URL + "/ui/")
		must.NoError(t, err)
		must.Eq(t, 200, status)
		rows, err := b.Table("#holds-table")
		must.NoError(t, err)
		must.Eq(t, [][]string{{"default", c.head, "2026-11-30 14:00:00Z"}}, rows, must.Sprint(c.token))
		must.SliceEmpty(t, b.Errors(), must.Sprintf("%s: console errors %q", c.token, b.Errors()))
		problems, err := b.Accessibility()
		must.NoError(t, err)
		must.SliceEmpty(t, problems, must.Sprintf("%s: accessibility", c.token))
	}
}
