package console_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/acl"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/quota"
	"github.com/allot-sh/allot/governor/server"
)

// Tokens of the fake Nomad: "ml" reads namespace ml, "mlw" writes it
// (submit-job and namespace write through a management-like check in the
// fake proxy), "root" is a management token; anything else is unknown.
// With aclsOff every token resolves to a caller allowed everything.
type fakeAuth struct {
	t       testing.TB
	aclsOff bool
}

func (f fakeAuth) Authenticate(r *http.Request) (*auth.Caller, error) {
	if f.aclsOff {
		return auth.Unrestricted(), nil
	}
	rules := map[string]string{
		"ml":  `namespace "ml" { policy = "read" }`,
		"mlw": `namespace "ml" { policy = "write" }`,
	}
	secret := auth.Token(r)
	if secret == "root" {
		return auth.NewCaller("root-accessor", "root", acl.ManagementACL), nil
	}
	rule, ok := rules[secret]
	if !ok {
		return nil, auth.ErrTokenNotFound
	}
	c, err := auth.CallerFromRules(secret, rule)
	must.NoError(f.t, err)
	return c, nil
}

type fixedPlan struct{ p *engine.Plan }

func (f fixedPlan) Latest() *engine.Plan { return f.p }

// hostile is a job name that would run script if it reached the page
// unescaped.
const hostile = `<script>alert("x")</script>`

// queued builds a held job's verdict.
func queued(ns, id, class string, pos, tpos int, reason string) engine.Verdict {
	return engine.Verdict{Namespace: ns, JobID: id, Class: class, State: engine.Queued, Position: pos, TenantPosition: tpos,
		QueuedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Reason: reason,
		Checks: []engine.Check{{Name: "class", OK: true, Detail: "class " + class}}}
}

// testPlan: namespaces ml and secret; ml has a hostile-named held job and
// "held", secret has "x".
func testPlan(extra ...engine.Verdict) *engine.Plan {
	q := []engine.Verdict{
		queued("ml", hostile, "standard", 1, 1, "fit: needs 4 gpu"),
		queued("secret", "x", "high", 2, 1, "fit: none"),
		queued("ml", "held", "low", 3, 2, "limit: needs 4 gpu; tenant ml uses 8 of limit 8"),
	}
	q = append(q, extra...)
	p := &engine.Plan{Queue: q, Verdicts: map[string]*engine.Verdict{}, Tenants: []engine.TenantStatus{
		{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "ml", Cohort: "default", Weight: 1, Quota: quota.Vector{"gpu": 4},
			Limit: quota.Vector{"gpu": 8}}}, Usage: quota.Vector{"gpu": 8}, Queued: 2, DominantShare: 0.5},
		{Tenant: engine.Tenant{Tenant: quota.Tenant{Namespace: "secret", Cohort: "default", Weight: 1}}, Queued: 1, DominantShare: 0.9},
	}}
	for i := range p.Queue {
		v := &p.Queue[i]
		p.Verdicts[v.Namespace+"/"+v.JobID] = v
	}
	return p
}

// fakeNomad answers the few Nomad routes the console uses, as the
// governor's proxy would pass them: namespace read/write (write needs
// "mlw" or "root"), job list, job, allocations. It records writes.
type fakeNomad struct {
	mu     sync.Mutex
	meta   map[string]map[string]string
	index  uint64
	writes []string
}

func newFakeNomad() *fakeNomad {
	return &fakeNomad{meta: map[string]map[string]string{"ml": {"allot.quota.gpu": "4", "allot.limit.gpu": "8"}, "secret": {}}, index: 10}
}

func (f *fakeNomad) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok := auth.Token(r)
	ns := r.URL.Query().Get("namespace")
	reads := func(ns string) bool { return tok == "root" || tok == "mlw" && ns == "ml" || tok == "ml" && ns == "ml" }
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/v1/namespace/"):
		name := strings.TrimPrefix(p, "/v1/namespace/")
		if r.Method == http.MethodGet {
			if !reads(name) {
				http.Error(w, "Permission denied", http.StatusForbidden)
				return
			}
			_ = json.NewEncoder(w).Encode(api.Namespace{Name: name, Meta: f.meta[name], ModifyIndex: f.index})
			return
		}
		if tok != "root" && tok != "mlw" {
			http.Error(w, "Permission denied", http.StatusForbidden)
			return
		}
		var in api.Namespace
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.meta[name], f.index = in.Meta, f.index+1
		f.writes = append(f.writes, name)
		_, _ = w.Write([]byte("{}"))
	case p == "/v1/jobs":
		if !reads(ns) {
			_, _ = w.Write([]byte("[]"))
			return
		}
		_ = json.NewEncoder(w).Encode([]api.JobListStub{{ID: "held", Status: "dead", Stop: true}, {ID: "running", Status: "running"}})
	case strings.HasSuffix(p, "/allocations"):
		_, _ = w.Write([]byte("[]"))
	case strings.HasPrefix(p, "/v1/job/") && r.Method == http.MethodDelete:
		if tok != "root" && !(tok == "mlw" && ns == "ml") {
			http.Error(w, "Permission denied", http.StatusForbidden)
			return
		}
		f.writes = append(f.writes, "stop "+ns+"/"+strings.TrimPrefix(r.URL.EscapedPath(), "/v1/job/"))
		_, _ = w.Write([]byte(`{"EvalID":"e"}`))
	case strings.HasPrefix(p, "/v1/job/"):
		if !reads(ns) {
			http.Error(w, "Permission denied", http.StatusForbidden)
			return
		}
		dead, stop := "dead", true
		_ = json.NewEncoder(w).Encode(api.Job{ID: &dead, Status: &dead, Stop: &stop})
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeNomad) written() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.writes...)
}

// newGovernor serves the governor's real handler (API + console) over a
// real store, with the fake Nomad behind the proxy route.
func newGovernor(t testing.TB, p *engine.Plan, aclsOff bool, tlsOn bool, mods ...func(*server.Server)) (*httptest.Server, *fakeNomad) {
	store := cluster.NewStore(quota.NewBook([]string{"low", "standard", "high"}), nil)
	store.SetNamespaces([]*api.Namespace{{Name: "ml"}, {Name: "secret"}})
	store.Reset(&cluster.Initial{})
	fn := newFakeNomad()
	s := &server.Server{Plans: fixedPlan{p}, Store: store, Proxy: fn, Auth: fakeAuth{t: t, aclsOff: aclsOff},
		Log: hclog.NewNullLogger(), Classes: map[string]engine.Class{"low": {Priority: 30}, "standard": {Priority: 50}, "high": {Priority: 70}}}
	for _, m := range mods {
		m(s)
	}
	var srv *httptest.Server
	if tlsOn {
		srv = httptest.NewTLSServer(s.Handler())
	} else {
		srv = httptest.NewServer(s.Handler())
	}
	t.Cleanup(srv.Close)
	return srv, fn
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t    testing.TB
	base string
	c    *http.Client
}

func newBrowser(t testing.TB, srv *httptest.Server) *browser {
	jar, err := cookiejar.New(nil)
	must.NoError(t, err)
	c := *srv.Client() // a copy: each browser has its own cookie jar
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{t: t, base: srv.URL, c: &c}
}

// get returns status, body and the response.
func (b *browser) get(path string, header ...string) (int, string, *http.Response) {
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	must.NoError(b.t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

func (b *browser) post(path string, form url.Values, header ...string) (int, string, *http.Response) {
	req, err := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	must.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

func (b *browser) do(req *http.Request) (int, string, *http.Response) {
	resp, err := b.c.Do(req)
	must.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must.NoError(b.t, err)
	return resp.StatusCode, string(body), resp
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// withoutTokens blanks the random CSRF values a page carries: a check
// that a page does not show a short string ("a2") must not fail on the
// 1 % of random tokens that happen to contain it.
func withoutTokens(body string) string {
	return csrfRE.ReplaceAllString(body, `name="csrf" value=""`)
}

// csrf finds the CSRF token of the first form on a page.
func csrf(t testing.TB, body string) string {
	m := csrfRE.FindStringSubmatch(body)
	must.SliceLen(t, 2, m, must.Sprint("no csrf field in page"))
	return m[1]
}

// signIn signs b in with token and returns the session's CSRF token.
func (b *browser) signIn(token string) string {
	status, body, _ := b.get("/ui/signin")
	must.Eq(b.t, http.StatusOK, status)
	status, _, resp := b.post("/ui/signin", url.Values{"csrf": {csrf(b.t, body)}, "token": {token}, "next": {"/ui/"}})
	must.Eq(b.t, http.StatusSeeOther, status, must.Sprint(fmt.Sprintf("sign-in with %q", token)))
	must.Eq(b.t, "/ui/", resp.Header.Get("Location"))
	status, body, _ = b.get("/ui/")
	must.Eq(b.t, http.StatusOK, status)
	return csrf(b.t, body)
}
