package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/console"
	"github.com/allot-sh/allot/governor/server"
)

func TestAuditViewFilters(t *testing.T) {
	srv, _, _ := newReportGovernor(t)
	cases := map[string]struct {
		token, query  string
		want, wantNot []string
	}{
		"management, all": {token: "root", want: []string{"alice", "bob",
			"<code>allot.quota.gpu</code>: <del>4</del> → <ins>6</ins>", "<code>allot.quota.gpu</code>: - → <ins>2</ins>",
			"<details><summary>through the governor xxx"}, wantNot: []string{"allot.limit.gpu</code>"}},
		"management, one tenant": {token: "root", query: "&tenant=ml", want: []string{"alice"}, wantNot: []string{"bob"}},
		"tenant sees its own":    {token: "ml", want: []string{"alice"}, wantNot: []string{"bob", "secret"}},
		"decisions only":         {token: "root", query: "&kind=decision:", want: []string{"No entries match."}, wantNot: []string{"alice"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBrowser(t, srv)
			b.signIn(tc.token)
			status, body, _ := b.get("/ui/audit?window=24h" + tc.query)
			must.Eq(t, http.StatusOK, status)
			for _, s := range tc.want {
				must.StrContains(t, body, s)
			}
			for _, s := range tc.wantNot {
				must.StrNotContains(t, withoutTokens(body), s)
			}
		})
	}
	b := newBrowser(t, srv)
	b.signIn("root")
	status, body, _ := b.get("/ui/audit?window=24h&verify=1")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, "The hash chain holds over all 2 entries.")
	b = newBrowser(t, srv)
	b.signIn("ml")
	status, body, _ = b.get("/ui/audit?window=24h&verify=1")
	must.Eq(t, http.StatusOK, status)
	must.StrNotContains(t, withoutTokens(body), "Verify the hash chain")
	must.StrNotContains(t, withoutTokens(body), "hash chain holds")
}

// TestAuditKindPrefixesMatchTheWriters: the job- filter covers the kinds
// the requeue and release actions write.
func TestAuditKindPrefixesMatchTheWriters(t *testing.T) {
	for _, k := range []string{server.KindJobRequeue, console.KindJobRelease} {
		must.StrHasPrefix(t, "job-", k)
	}
}

// TestReportParamsHostile sends a tenant's hand-made query strings to the
// audit, usage and CSV views: unknown values fall back to the defaults,
// what is echoed is escaped (links keep the query, encoded), another tenant's rows never show, and the
// CSV export refuses a bad window or grouping with the API's clear 400.
func TestReportParamsHostile(t *testing.T) {
	srv, _, _ := newReportGovernor(t)
	cases := map[string]struct {
		path          string
		status        int
		want, wantNot []string
	}{
		"audit, another tenant": {"/ui/audit?window=-1&tenant=secret", http.StatusOK,
			[]string{`aria-current="page">Audit`}, []string{"bob"}},
		"audit, markup in filters": {"/ui/audit?kind=%3Cscript%3E&tenant=%3Cscript%3Ex", http.StatusOK,
			[]string{"No entries match."}, []string{"<script>x", `value="<script>`}},
		"audit, huge window": {"/ui/audit?window=" + strings.Repeat("9", 5000), http.StatusOK,
			[]string{`<option value="24h" selected>`}, []string{`<option value="` + strings.Repeat("9", 100)}},
		"usage, unknown window and grouping": {"/ui/usage?window=999d&by=%3Bdrop", http.StatusOK,
			[]string{`<option value="24h" selected>`, `<option value="tenant" selected>`}, []string{`value=";drop"`}},
		"csv, another tenant": {"/ui/usage.csv?by=tenant&namespace=secret", http.StatusOK,
			[]string{"\nml,"}, []string{"secret"}},
		"csv, garbage time": {"/ui/usage.csv?since=garbage", http.StatusBadRequest,
			[]string{`bad report query: time "garbage" is neither RFC 3339 nor Unix seconds`}, nil},
		"csv, inverted window": {"/ui/usage.csv?since=2026-01-01T00:00:00Z&until=1970-01-01T00:00:00Z", http.StatusBadRequest,
			[]string{"is not before until"}, nil},
		"csv, year 99999": {"/ui/usage.csv?since=99999-01-01T00:00:00Z", http.StatusBadRequest,
			[]string{"neither RFC 3339 nor Unix seconds"}, nil},
		"csv, since min int64": {"/ui/usage.csv?since=-9223372036854775808", http.StatusBadRequest,
			[]string{`time "-9223372036854775808" is outside years 0–9999`}, nil},
		"csv, until max int64": {"/ui/usage.csv?until=9223372036854775807", http.StatusBadRequest,
			[]string{`time "9223372036854775807" is outside years 0–9999`}, nil},
		"csv, markup grouping": {"/ui/usage.csv?by=%3Cx%3E", http.StatusBadRequest,
			[]string{`cannot group by "<x>"`}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBrowser(t, srv)
			b.signIn("ml")
			status, body, resp := b.get(tc.path)
			must.Eq(t, tc.status, status)
			if tc.status != http.StatusOK || strings.HasPrefix(tc.path, "/ui/usage.csv") {
				must.StrNotContains(t, resp.Header.Get("Content-Type"), "html")
			}
			for _, s := range tc.want {
				must.StrContains(t, body, s)
			}
			for _, s := range tc.wantNot {
				must.StrNotContains(t, withoutTokens(body), s)
			}
		})
	}
}
