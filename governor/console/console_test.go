package console_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/console"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/server"
)

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestSignInAndOut(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false)
	b := newBrowser(t, srv)

	status, _, resp := b.get("/ui/queue")
	must.Eq(t, http.StatusSeeOther, status)
	must.Eq(t, "/ui/signin?next=%2Fui%2Fqueue", resp.Header.Get("Location"))

	status, body, _ := b.get("/ui/signin")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, `<label for="token">`)
	status, body, _ = b.post("/ui/signin", url.Values{"csrf": {csrf(t, body)}, "token": {"not-a-token"}})
	must.Eq(t, http.StatusForbidden, status)
	must.StrContains(t, body, "ACL token not found")

	status, body, _ = b.get("/ui/signin")
	must.Eq(t, http.StatusOK, status)
	status, _, resp = b.post("/ui/signin", url.Values{"csrf": {csrf(t, body)}, "token": {"ml"}, "next": {"/ui/queue"}})
	must.Eq(t, http.StatusSeeOther, status)
	must.Eq(t, "/ui/queue", resp.Header.Get("Location"))
	ck := cookieNamed(resp, "allot_session")
	must.NotNil(t, ck)
	must.True(t, ck.HttpOnly)
	must.Eq(t, http.SameSiteStrictMode, ck.SameSite)
	must.False(t, ck.Secure, must.Sprint("plain HTTP: a Secure cookie would never come back"))
	must.Eq(t, "/ui/", ck.Path)
	// The cookie is an opaque session id (32 random bytes, base64url),
	// never the token: the token is 2 characters, so a substring test
	// would fail on 1 % of random ids and prove nothing.
	raw, err := base64.RawURLEncoding.DecodeString(ck.Value)
	must.NoError(t, err)
	must.Len(t, 32, raw)
	must.NotEq(t, "ml", ck.Value)

	status, body, _ = b.get("/ui/queue")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, `<span class="identity">`)

	// Signing in again replaces the session: the old id no longer works.
	_, body2, _ := b.get("/ui/signin")
	status, _, resp = b.post("/ui/signin", url.Values{"csrf": {csrf(t, body2)}, "token": {"ml"}})
	must.Eq(t, http.StatusSeeOther, status)
	renewed := cookieNamed(resp, "allot_session")
	must.NotEq(t, ck.Value, renewed.Value)
	stale := newBrowser(t, srv)
	u, _ := url.Parse(srv.URL + "/ui/")
	stale.c.Jar.SetCookies(u, []*http.Cookie{{Name: "allot_session", Value: ck.Value, Path: "/ui/"}})
	status, _, _ = stale.get("/ui/queue")
	must.Eq(t, http.StatusSeeOther, status)
	status, body, _ = b.get("/ui/queue")
	must.Eq(t, http.StatusOK, status)
	token := csrf(t, body)

	status, _, _ = b.post("/ui/signout", url.Values{"csrf": {"wrong"}})
	must.Eq(t, http.StatusForbidden, status)
	status, _, _ = b.post("/ui/signout", url.Values{"csrf": {token}})
	must.Eq(t, http.StatusSeeOther, status)
	status, _, _ = b.get("/ui/queue")
	must.Eq(t, http.StatusSeeOther, status, must.Sprint("signed out: back to the sign-in page"))
}

func TestSignInNeedsItsOwnCSRFToken(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false)
	b := newBrowser(t, srv)
	// No sign-in form fetched: no pre-session cookie (login CSRF).
	status, _, resp := b.post("/ui/signin", url.Values{"csrf": {"guess"}, "token": {"ml"}})
	must.Eq(t, http.StatusForbidden, status)
	must.Nil(t, cookieNamed(resp, "allot_session"))
	// Open redirect: next outside the console goes to /ui/.
	_, body, _ := b.get("/ui/signin")
	_, _, resp = b.post("/ui/signin", url.Values{"csrf": {csrf(t, body)}, "token": {"ml"}, "next": {"//evil.example/x"}})
	must.Eq(t, "/ui/", resp.Header.Get("Location"))
}

func TestCookiesSecureUnderTLS(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, true)
	b := newBrowser(t, srv)
	_, body, resp := b.get("/ui/signin")
	must.True(t, cookieNamed(resp, "allot_signin").Secure)
	_, _, resp = b.post("/ui/signin", url.Values{"csrf": {csrf(t, body)}, "token": {"ml"}})
	ck := cookieNamed(resp, "allot_session")
	must.NotNil(t, ck)
	must.True(t, ck.Secure)
	must.True(t, ck.HttpOnly)
}

func TestWritesRefusedWithoutCSRF(t *testing.T) {
	srv, fn := newGovernor(t, testPlan(), false, false)
	b := newBrowser(t, srv)
	token := b.signIn("mlw")
	form := url.Values{"resource": {"gpu"}, "quota": {"6"}}
	cases := map[string]struct {
		csrf   string
		header []string
	}{
		"no token":           {csrf: ""},
		"wrong token":        {csrf: token + "x"},
		"cross-origin":       {csrf: token, header: []string{"Origin", "http://evil.example"}},
		"cross-site fetch":   {csrf: token, header: []string{"Sec-Fetch-Site", "cross-site"}},
		"other scheme, same": {csrf: token, header: []string{"Origin", "https://" + strings.TrimPrefix(srv.URL, "http://")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := url.Values{}
			for k, v := range form {
				f[k] = v
			}
			f.Set("csrf", tc.csrf)
			status, body, _ := b.post("/ui/tenants/ml/quota", f, tc.header...)
			must.Eq(t, http.StatusForbidden, status)
			must.StrContains(t, body, "CSRF")
		})
	}
	must.SliceEmpty(t, fn.written(), must.Sprint("no refused write reached Nomad"))

	f := url.Values{"resource": {"gpu"}, "quota": {"6"}, "csrf": {token}}
	status, _, resp := b.post("/ui/tenants/ml/quota", f, "Origin", srv.URL)
	must.Eq(t, http.StatusSeeOther, status)
	must.Eq(t, "/ui/tenants/ml?saved=gpu", resp.Header.Get("Location"))
	must.Eq(t, []string{"ml"}, fn.written())
	must.Eq(t, "6", fn.meta["ml"]["allot.quota.gpu"])
	must.Eq(t, "8", fn.meta["ml"]["allot.limit.gpu"], must.Sprint("other keys stay"))
}

func TestQuotaValidatedLikeAllotctlAndNomadDecides(t *testing.T) {
	srv, fn := newGovernor(t, testPlan(), false, false)
	cases := map[string]struct {
		token      string
		form       url.Values
		wantStatus int
		wantText   string
	}{
		"unknown resource":  {"mlw", url.Values{"resource": {"tpu"}, "quota": {"1"}}, http.StatusBadRequest, "unknown resource"},
		"bad amount":        {"mlw", url.Values{"resource": {"gpu"}, "quota": {"lots"}}, http.StatusBadRequest, "allot.quota.gpu"},
		"nothing given":     {"mlw", url.Values{"resource": {"gpu"}}, http.StatusBadRequest, "give a quota"},
		"limit below quota": {"mlw", url.Values{"resource": {"gpu"}, "limit": {"2"}}, http.StatusBadRequest, "not written"},
		"read-only token":   {"ml", url.Values{"resource": {"gpu"}, "quota": {"2"}}, http.StatusForbidden, "Nomad refused the change (403): Permission denied"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBrowser(t, srv)
			tc.form.Set("csrf", b.signIn(tc.token))
			status, body, _ := b.post("/ui/tenants/ml/quota", tc.form)
			must.Eq(t, tc.wantStatus, status)
			must.StrContains(t, body, tc.wantText)
			must.StrContains(t, body, fmt.Sprintf(`value="%s"`, tc.form.Get("resource")), must.Sprint("the form keeps the input"))
		})
	}
	must.SliceEmpty(t, fn.written())
}

func TestOtherTenantIs403(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false)
	b := newBrowser(t, srv)
	token := b.signIn("ml")
	for _, path := range []string{"/ui/jobs/secret/x", "/ui/jobs/secret/nothing-there", "/ui/tenants/secret"} {
		status, body, _ := b.get(path)
		must.Eq(t, http.StatusForbidden, status, must.Sprint(path))
		must.StrContains(t, body, "Permission denied")
		must.StrNotContains(t, withoutTokens(body), "fit: none")
	}
	status, _, _ := b.post("/ui/tenants/secret/quota", url.Values{"csrf": {token}, "resource": {"gpu"}, "quota": {"1"}})
	must.Eq(t, http.StatusForbidden, status)
	status, body, _ := b.get("/ui/queue?tenant=secret")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, "0 match of 2 you can see (3 queued in all)")
	must.StrNotContains(t, withoutTokens(body), "fit: none")
	for _, path := range []string{"/ui/", "/ui/queue", "/ui/tenants/", "/ui/tenants/ml", "/ui/jobs/ml/held"} {
		status, body, _ := b.get(path)
		must.Eq(t, http.StatusOK, status, must.Sprint(path))
		must.StrNotContains(t, withoutTokens(body), "secret", must.Sprint(path))
	}
}

func TestHostileNamesAreEscaped(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false)
	b := newBrowser(t, srv)
	b.signIn("ml")
	for _, path := range []string{"/ui/queue", "/ui/tenants/ml", "/ui/jobs/ml/" + url.PathEscape(hostile)} {
		status, body, _ := b.get(path)
		must.Eq(t, http.StatusOK, status, must.Sprint(path))
		must.StrNotContains(t, withoutTokens(body), hostile, must.Sprint(path))
		must.StrNotContains(t, withoutTokens(body), "<script>alert", must.Sprint(path))
		must.StrContains(t, body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", must.Sprint(path))
	}
	// Every script the console sends is its own file; the CSP forbids
	// inline script.
	status, body, resp := b.get("/ui/queue")
	must.Eq(t, http.StatusOK, status)
	must.Eq(t, 1, strings.Count(body, "<script"))
	must.StrContains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
}

func TestHeldJobShowsQueued(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false)
	b := newBrowser(t, srv)
	b.signIn("ml")
	status, body, _ := b.get("/ui/jobs/ml/held")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, `<span class="tag state-queued">queued</span>`)
	must.StrContains(t, body, "limit: needs 4 gpu; tenant ml uses 8 of limit 8")
	must.StrNotContains(t, withoutTokens(body), "dead", must.Sprint("Nomad calls a held job dead; the console does not"))
	_, body, _ = b.get("/ui/tenants/ml")
	must.RegexMatch(t, regexp.MustCompile(`held</a></td>\s*<td><span class="tag queued">queued</span>`), body)
	must.StrContains(t, body, `running</a></td>`)
}

func TestQueuePagesAndFilters(t *testing.T) {
	var extra []engine.Verdict
	for i := 0; i < 120; i++ {
		class := "standard"
		if i%2 == 1 {
			class = "low"
		}
		extra = append(extra, queued("ml", fmt.Sprintf("j%03d", i), class, 4+i, 3+i, "fit: none"))
	}
	srv, _ := newGovernor(t, testPlan(extra...), false, false)
	b := newBrowser(t, srv)
	b.signIn("ml")
	status, body, _ := b.get("/ui/queue?page=2")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, "122 match of 122 you can see (123 queued in all)")
	must.StrContains(t, body, `data-position="52"`)
	must.StrNotContains(t, withoutTokens(body), `data-position="51"`)
	must.StrContains(t, body, "Page 2 of 3")
	_, body, _ = b.get("/ui/queue?class=low&page=2")
	must.StrContains(t, body, "61 match of 122 you can see") // 60 of the extra jobs and "held"
	must.Eq(t, 11, strings.Count(body, "<td>low</td>"))
	must.StrNotContains(t, withoutTokens(body), "<td>standard</td>")
}

func TestACLsOffNeedsNoSignIn(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), true, false)
	b := newBrowser(t, srv)
	status, body, _ := b.get("/ui/")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, "ACLs are disabled: everyone sees everything.")
	must.StrContains(t, body, "secret", must.Sprint("without ACLs every tenant shows"))
	must.StrNotContains(t, withoutTokens(body), "Sign out")
}

func TestLanguages(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false)
	b := newBrowser(t, srv)
	b.signIn("ml")
	_, body, _ := b.get("/ui/queue", "Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8")
	must.StrContains(t, body, `<html lang="zh-Hans">`)
	must.StrContains(t, body, "<h1>队列</h1>")
	_, body, _ = b.get("/ui/queue", "Accept-Language", "fr, en;q=0.5, zh;q=0.1")
	must.StrContains(t, body, `<html lang="en">`)
	_, body, resp := b.get("/ui/queue?lang=zh")
	must.StrContains(t, body, "<h1>队列</h1>")
	must.Eq(t, "zh", cookieNamed(resp, "allot_lang").Value)
	_, body, _ = b.get("/ui/queue", "Accept-Language", "en")
	must.StrContains(t, body, "<h1>队列</h1>", must.Sprint("the switch outlasts Accept-Language"))
	must.StrContains(t, body, `href="/ui/queue?lang=en"`)
}

func TestRootRedirectsBrowsers(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false)
	b := newBrowser(t, srv)
	status, _, resp := b.get("/", "Accept", "text/html,application/xhtml+xml")
	must.Eq(t, http.StatusFound, status)
	must.Eq(t, "/ui/", resp.Header.Get("Location"))
	status, _, _ = b.get("/")
	must.Eq(t, http.StatusNotFound, status)
	status, _, _ = b.get("/nothing")
	must.Eq(t, http.StatusNotFound, status)
	status, _, _ = b.get("/ui/static/vendor/htmx.min.js")
	must.Eq(t, http.StatusOK, status)
}

// withLedger gives the server a real (SQLite) ledger and returns it.
func withLedger(t *testing.T, db **ledger.DB) func(*server.Server) {
	return func(s *server.Server) {
		d, err := ledger.Open(context.Background(), ledger.DriverSQLite, filepath.Join(t.TempDir(), "ledger.db"))
		must.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		s.Ledger = &ledger.API{DB: d}
		*db = d
	}
}

func TestReleaseStopsWithTheCallersTokenAndIsAudited(t *testing.T) {
	var db *ledger.DB
	srv, fn := newGovernor(t, testPlan(), false, false, withLedger(t, &db))
	ctx := context.Background()

	// A read-only token: Nomad refuses, nothing is audited.
	ro := newBrowser(t, srv)
	token := ro.signIn("ml")
	_, body, _ := ro.get("/ui/jobs/ml/held")
	must.StrContains(t, body, `action="/ui/release/ml/held"`)
	status, body, _ := ro.post("/ui/release/ml/held", url.Values{"csrf": {token}})
	must.Eq(t, http.StatusForbidden, status)
	must.StrContains(t, body, "Nomad refused the release (403): Permission denied")
	status, _, _ = ro.post("/ui/release/secret/x", url.Values{"csrf": {token}})
	must.Eq(t, http.StatusForbidden, status)
	status, _, _ = ro.post("/ui/release/ml/held", url.Values{})
	must.Eq(t, http.StatusForbidden, status)
	must.SliceEmpty(t, fn.written())
	entries, err := db.Entries(ctx, ledger.AuditQuery{})
	must.NoError(t, err)
	must.SliceEmpty(t, entries)

	// A management token stops the hostile-named job: the exact ID reaches
	// Nomad, the audit log names the actor.
	rw := newBrowser(t, srv)
	token = rw.signIn("root")
	page := "/ui/jobs/ml/" + url.PathEscape(hostile)
	_, body, _ = rw.get(page)
	must.StrContains(t, body, `action="/ui/release/ml/%3Cscript%3Ealert%28%22x%22%29%3C%2Fscript%3E"`)
	status, _, resp := rw.post("/ui/release/ml/"+url.PathEscape(hostile), url.Values{"csrf": {token}})
	must.Eq(t, http.StatusSeeOther, status)
	must.Eq(t, page+"?released=audited", resp.Header.Get("Location"))
	must.Eq(t, []string{"stop ml/" + url.PathEscape(hostile)}, fn.written())
	entries, err = db.Entries(ctx, ledger.AuditQuery{})
	must.NoError(t, err)
	must.SliceLen(t, 1, entries)
	must.Eq(t, console.KindJobRelease, entries[0].Kind)
	must.Eq(t, "root-accessor", entries[0].Actor)
	must.Eq(t, "ml", entries[0].Namespace)
	must.Eq(t, hostile, entries[0].Subject)
	_, body, _ = rw.get(page + "?released=audited")
	must.StrContains(t, body, "Stopped and released; written to the audit log.")
}

func TestReleaseWithoutLedgerSaysNotAudited(t *testing.T) {
	srv, fn := newGovernor(t, testPlan(), false, false)
	b := newBrowser(t, srv)
	token := b.signIn("mlw")
	status, _, resp := b.post("/ui/release/ml/held", url.Values{"csrf": {token}})
	must.Eq(t, http.StatusSeeOther, status)
	must.Eq(t, "/ui/jobs/ml/held?released=unaudited", resp.Header.Get("Location"))
	must.Eq(t, []string{"stop ml/held"}, fn.written())
}

// TestSignInHostileToken posts tokens a user may paste, or an attacker
// may send, to the sign-in form, resolved by the real authenticator
// against a Nomad that knows none of them: a token with a control
// character is refused as malformed without asking Nomad (before, the
// header could not be sent and the page said Nomad was unavailable, 503);
// a huge or non-ASCII one is Nomad's refusal. None starts a session.
func TestSignInHostileToken(t *testing.T) {
	var asked atomic.Int64
	nomad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Error(w, "ACL token not found", http.StatusForbidden)
	}))
	t.Cleanup(nomad.Close)
	u, err := url.Parse(nomad.URL)
	must.NoError(t, err)
	srv, _ := newGovernor(t, testPlan(), false, false, func(s *server.Server) { s.Auth = auth.New(auth.Options{Nomad: u}) })
	cases := map[string]struct {
		token  string
		status int
		text   string
		asks   bool
	}{
		"newline":       {"ml\nX-Evil: 1", http.StatusBadRequest, "it contains control characters", false},
		"carriage":      {"ml\rx", http.StatusBadRequest, "it contains control characters", false},
		"nul":           {"ml\x00", http.StatusBadRequest, "it contains control characters", false},
		"delete":        {"m\x7fl", http.StatusBadRequest, "it contains control characters", false},
		"escape":        {"\x1b[31mml", http.StatusBadRequest, "it contains control characters", false},
		"only spaces":   {" \t\n ", http.StatusBadRequest, "Enter a token.", false},
		"huge":          {strings.Repeat("x", 1<<20), http.StatusForbidden, "ACL token not found", true},
		"non-ascii":     {"令牌", http.StatusForbidden, "ACL token not found", true},
		"html":          {"<script>alert(1)</script>", http.StatusForbidden, "ACL token not found", true},
		"trailing crlf": {"unknown\r\n", http.StatusForbidden, "ACL token not found", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBrowser(t, srv)
			_, body, _ := b.get("/ui/signin")
			before := asked.Load()
			status, body, resp := b.post("/ui/signin", url.Values{"csrf": {csrf(t, body)}, "token": {tc.token}})
			must.Eq(t, tc.status, status)
			must.StrContains(t, body, tc.text)
			must.StrNotContains(t, withoutTokens(body), "<script>alert")
			must.Nil(t, cookieNamed(resp, "allot_session"))
			must.Eq(t, tc.asks, asked.Load() > before)
		})
	}
}

// TestForgedCookies sends cookies a browser never got from the console: a
// session cookie that names no session (garbage, huge, the session's own
// CSRF token, a prefix of a real id) is sent to sign in, and a language
// cookie that names no language leaves the page in English.
func TestForgedCookies(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false)
	real := newBrowser(t, srv)
	token := real.signIn("ml")
	u, err := url.Parse(srv.URL + "/ui/")
	must.NoError(t, err)
	var id string
	for _, ck := range real.c.Jar.Cookies(u) {
		if ck.Name == "allot_session" {
			id = ck.Value
		}
	}
	must.NotEq(t, "", id)
	sessions := map[string]string{
		"garbage":        "not-a-session",
		"huge":           strings.Repeat("A", 3000),
		"csrf token":     token,
		"prefix of real": id[:len(id)-1],
		"quoted":         `"` + id + `x"`,
	}
	for name, v := range sessions {
		t.Run("session "+name, func(t *testing.T) {
			status, _, resp := newBrowser(t, srv).get("/ui/queue", "Cookie", "allot_session="+v)
			must.Eq(t, http.StatusSeeOther, status)
			must.StrHasPrefix(t, "/ui/signin?", resp.Header.Get("Location"))
		})
	}
	langs := map[string]struct{ cookie, want string }{
		"unsupported": {"fr", "en"}, "underscore": {"zh_CN", "en"}, "huge": {strings.Repeat("z", 3000), "en"},
		"path": {"../zh", "en"}, "suffix": {"zhx", "en"}, "chinese (control)": {"zh-TW", "zh-Hans"},
	}
	for name, tc := range langs {
		t.Run("lang "+name, func(t *testing.T) {
			status, body, _ := real.get("/ui/queue", "Cookie", "allot_session="+id+"; allot_lang="+tc.cookie)
			must.Eq(t, http.StatusOK, status)
			must.StrContains(t, body, `<html lang="`+tc.want+`">`)
		})
	}
}
