package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestIdleViewFilteredByToken(t *testing.T) {
	srv, _, _ := newReportGovernor(t)
	b := newBrowser(t, srv)
	b.signIn("root")
	status, body, _ := b.get("/ui/idle")
	must.Eq(t, http.StatusOK, status)
	for _, s := range []string{"notebook", "secret-notebook", "GPU-zombie", "interactive debugging", "secret reason",
		`id="exempt-form"`, "01234567", "1 without data", "no telemetry (never counted as idle)"} {
		must.StrContains(t, body, s)
	}

	b = newBrowser(t, srv)
	b.signIn("ml")
	status, body, _ = b.get("/ui/idle")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, "notebook")
	must.StrContains(t, body, "interactive debugging")
	for _, s := range []string{"secret", "GPU-zombie", `id="exempt-form"`} {
		must.StrNotContains(t, withoutTokens(body), s)
	}
	must.StrContains(t, body, "Only operators (management tokens) may grant exemptions.")
}

func TestIdleExemptionValidatedWrittenAndRefused(t *testing.T) {
	srv, fn, _ := newReportGovernor(t)
	b := newBrowser(t, srv)
	token := b.signIn("root")
	form := func(ns, job, until, reason string) url.Values {
		return url.Values{"csrf": {token}, "namespace": {ns}, "job": {job}, "until": {until}, "reason": {reason}}
	}
	bad := map[string]struct {
		form url.Values
		want string
	}{
		"no reason":   {form("ml", "notebook", "48h", "  "), "the reason must not be empty"},
		"past expiry": {form("ml", "notebook", "-1h", "x"), "the expiry must be in the future"},
		"too far":     {form("ml", "notebook", "2400h", "x"), "the expiry must be within 2160h0m0s"},
		"not a time":  {form("ml", "notebook", "tomorrow", "x"), `&#34;tomorrow&#34; is neither a duration (48h) nor an RFC3339 time`},
		"no job":      {form("ml", "", "48h", "x"), "give a namespace and a job ID"},
		"long reason": {form("ml", "notebook", "48h", strings.Repeat("x", 501)), "the reason is 501 characters, over 500"},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			status, body, _ := b.post("/ui/idle/exempt", tc.form)
			must.Eq(t, http.StatusBadRequest, status)
			must.StrContains(t, body, tc.want)
			must.SliceEmpty(t, fn.written())
		})
	}

	// Without the session's CSRF token nothing is written.
	noCSRF := form("ml", "notebook", "48h", "x")
	noCSRF.Del("csrf")
	status, _, _ := b.post("/ui/idle/exempt", noCSRF)
	must.Eq(t, http.StatusForbidden, status)
	must.SliceEmpty(t, fn.written())

	status, _, resp := b.post("/ui/idle/exempt", form("ml", "notebook", "48h", "demo; tomorrow"))
	must.Eq(t, http.StatusSeeOther, status)
	must.Eq(t, "/ui/idle?exempted=ml%2Fnotebook", resp.Header.Get("Location"))
	must.Eq(t, []string{"ml"}, fn.written())
	fn.mu.Lock()
	v := fn.meta["ml"]["allot.idle.exempt.notebook"]
	kept := fn.meta["ml"]["allot.quota.gpu"]
	fn.mu.Unlock()
	must.Eq(t, "4", kept, must.Sprint("other meta keys are kept"))
	until, reason, ok := strings.Cut(strings.TrimPrefix(v, "until="), ";reason=")
	must.True(t, ok, must.Sprintf("meta value %q", v))
	must.Eq(t, "demo, tomorrow", reason)
	at, err := time.Parse(time.RFC3339, until)
	must.NoError(t, err)
	must.Between(t, 47*time.Hour, time.Until(at), 49*time.Hour)
	status, body, _ := b.get("/ui/idle?exempted=ml%2Fnotebook")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, "Exemption granted for ml/notebook.")

	// A tenant's token sees no form; a forged POST is refused by Nomad.
	tb := newBrowser(t, srv)
	ttoken := tb.signIn("ml")
	status, body, _ = tb.post("/ui/idle/exempt", url.Values{"csrf": {ttoken}, "namespace": {"ml"}, "job": {"x"}, "until": {"1h"}, "reason": {"me"}})
	must.Eq(t, http.StatusForbidden, status)
	must.StrContains(t, body, "Permission denied")
	must.Eq(t, []string{"ml"}, fn.written())
}
