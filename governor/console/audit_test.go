package console_test

import (
	"net/http"
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
				must.StrNotContains(t, body, s)
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
	must.StrNotContains(t, body, "Verify the hash chain")
	must.StrNotContains(t, body, "hash chain holds")
}

// TestAuditKindPrefixesMatchTheWriters: the job- filter covers the kinds
// the requeue and release actions write.
func TestAuditKindPrefixesMatchTheWriters(t *testing.T) {
	for _, k := range []string{server.KindJobRequeue, console.KindJobRelease} {
		must.StrHasPrefix(t, "job-", k)
	}
}
