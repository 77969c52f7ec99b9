package auth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// fakeNomad answers the ACL endpoints the way Nomad 1.6.1 does, including
// who may read which policy and role.
type fakeNomad struct {
	mu       sync.Mutex
	disabled bool
	tokens   map[string]*api.ACLToken // by secret
	policies map[string]string        // rules by name
	roles    map[string][]string      // policy names by role ID
	requests atomic.Int64
	// gate, when set, blocks every request until it is closed; arrived
	// gets one value per request that reached the gate.
	gate    chan struct{}
	arrived chan struct{}
}

func newFakeNomad() *fakeNomad {
	return &fakeNomad{tokens: map[string]*api.ACLToken{}, policies: map[string]string{}, roles: map[string][]string{}}
}

func (f *fakeNomad) token(secret, typ string, policies ...string) *api.ACLToken {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &api.ACLToken{AccessorID: "acc-" + secret, SecretID: secret, Name: "tok-" + secret, Type: typ, Policies: policies}
	f.tokens[secret] = t
	return t
}

func (f *fakeNomad) revoke(secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tokens, secret)
}

func (f *fakeNomad) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	if f.gate != nil {
		f.arrived <- struct{}{}
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.disabled {
		http.Error(w, "ACL support disabled", http.StatusBadRequest)
		return
	}
	tok := f.tokens[r.Header.Get("X-Nomad-Token")]
	switch {
	case r.URL.Path == "/v1/acl/token/self":
		if tok == nil {
			http.Error(w, "ACL token not found", http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(tok)
	case strings.HasPrefix(r.URL.Path, "/v1/acl/policy/"):
		f.policy(w, tok, strings.TrimPrefix(r.URL.Path, "/v1/acl/policy/"))
	case strings.HasPrefix(r.URL.Path, "/v1/acl/role/"):
		f.role(w, tok, strings.TrimPrefix(r.URL.Path, "/v1/acl/role/"))
	default:
		http.NotFound(w, r)
	}
}

// holds mirrors ACL.GetPolicy: the anonymous policy is anyone's; other
// callers need a management token or the policy among theirs.
func (f *fakeNomad) holds(tok *api.ACLToken, name string) bool {
	if name == "anonymous" || (tok != nil && tok.Type == "management") {
		return true
	}
	if tok == nil {
		return false
	}
	names := append([]string(nil), tok.Policies...)
	for _, l := range tok.Roles {
		names = append(names, f.roles[l.ID]...)
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func (f *fakeNomad) policy(w http.ResponseWriter, tok *api.ACLToken, name string) {
	if !f.holds(tok, name) {
		http.Error(w, "Permission denied", http.StatusForbidden)
		return
	}
	rules, ok := f.policies[name]
	if !ok {
		http.Error(w, "ACL policy not found", http.StatusNotFound)
		return
	}
	_ = json.NewEncoder(w).Encode(api.ACLPolicy{Name: name, Rules: rules})
}

func (f *fakeNomad) role(w http.ResponseWriter, tok *api.ACLToken, id string) {
	linked := false
	for _, l := range tok.Roles {
		linked = linked || l.ID == id
	}
	if !linked {
		http.Error(w, "Permission denied", http.StatusForbidden)
		return
	}
	names, ok := f.roles[id]
	if !ok {
		http.Error(w, "ACL role not found", http.StatusNotFound)
		return
	}
	role := api.ACLRole{ID: id}
	for _, n := range names {
		role.Policies = append(role.Policies, &api.ACLRolePolicyLink{Name: n})
	}
	_ = json.NewEncoder(w).Encode(role)
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is an Authenticator against a fake Nomad with a fake clock.
type harness struct {
	nomad *fakeNomad
	clock *fakeClock
	auth  *Authenticator
}

func newHarness(t *testing.T, mod func(*Options)) *harness {
	t.Helper()
	f := newFakeNomad()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	clock := &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	opts := Options{Nomad: u, Client: srv.Client(), Now: clock.Now}
	if mod != nil {
		mod(&opts)
	}
	return &harness{nomad: f, clock: clock, auth: New(opts)}
}

// request builds a request carrying secret in X-Nomad-Token (none if "").
func request(secret string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/allot/v1/queue", nil)
	if secret != "" {
		r.Header.Set("X-Nomad-Token", secret)
	}
	return r
}

const tenantRules = `
namespace "ml-research" {
  policy       = "read"
  capabilities = ["submit-job", "dispatch-job", "read-logs", "read-fs", "alloc-lifecycle", "scale-job", "parse-job"]
}
`
