package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/acl"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

func TestToken(t *testing.T) {
	cases := map[string]struct {
		headers map[string]string
		want    string
	}{
		"none":                        {want: ""},
		"x-nomad-token trimmed":       {headers: map[string]string{"X-Nomad-Token": "  s1 "}, want: "s1"},
		"bearer":                      {headers: map[string]string{"Authorization": "Bearer s2"}, want: "s2"},
		"bearer any case, first word": {headers: map[string]string{"Authorization": "bEaReR  s3 extra"}, want: "s3"},
		"basic is not a token":        {headers: map[string]string{"Authorization": "Basic czQ="}, want: ""},
		"scheme alone":                {headers: map[string]string{"Authorization": "Bearer"}, want: ""},
		"x-nomad-token wins":          {headers: map[string]string{"X-Nomad-Token": "s4", "Authorization": "Bearer s5"}, want: "s4"},
		"blank x-nomad-token is anonymous, as in Nomad": {
			headers: map[string]string{"X-Nomad-Token": "   ", "Authorization": "Bearer s6"}, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			must.Eq(t, tc.want, Token(r))
		})
	}
}

func TestResolveClientTokenWithNomadsACL(t *testing.T) {
	h := newHarness(t, nil)
	h.nomad.policies["tenant-ml-research"] = tenantRules
	h.nomad.token("tenant", "client", "tenant-ml-research", "gone-policy")
	c, err := h.auth.Authenticate(request("tenant"))
	must.NoError(t, err)
	must.Eq(t, "acc-tenant", c.AccessorID)
	must.Eq(t, TypeClient, c.Type)
	must.False(t, c.Management())
	must.True(t, c.CanRead("ml-research"))
	must.True(t, c.Allowed("ml-research", acl.NamespaceCapabilitySubmitJob))
	must.True(t, c.Allowed("ml-research", acl.NamespaceCapabilityScaleJob))
	must.False(t, c.Allowed("ml-research", acl.NamespaceCapabilityAllocExec))
	must.False(t, c.CanRead("ml-prod"))
	must.False(t, c.Allowed("default", acl.NamespaceCapabilitySubmitJob))
}

func TestResolveRolePolicies(t *testing.T) {
	h := newHarness(t, nil)
	h.nomad.policies["p-prod"] = `namespace "ml-prod" { policy = "write" }`
	h.nomad.roles["role-1"] = []string{"p-prod", "missing"}
	tok := h.nomad.token("via-role", "client")
	tok.Roles = []*api.ACLTokenRoleLink{{ID: "role-1"}, {ID: "deleted-role"}}
	h.nomad.roles["deleted-role"] = nil
	delete(h.nomad.roles, "deleted-role")
	c, err := h.auth.Authenticate(request("via-role"))
	must.NoError(t, err)
	must.True(t, c.Allowed("ml-prod", acl.NamespaceCapabilitySubmitJob))
	must.False(t, c.CanRead("ml-research"))
}

func TestManagementToken(t *testing.T) {
	h := newHarness(t, nil)
	h.nomad.token("root", "management")
	c, err := h.auth.Authenticate(request("root"))
	must.NoError(t, err)
	must.True(t, c.Management())
	must.True(t, c.CanRead("anything"))
	must.Eq(t, int64(1), h.nomad.requests.Load(), must.Sprint("management needs no policy read"))
}

func TestAnonymous(t *testing.T) {
	t.Run("without an anonymous policy gets nothing", func(t *testing.T) {
		h := newHarness(t, nil)
		c, err := h.auth.Authenticate(request(""))
		must.NoError(t, err)
		must.True(t, c.Anonymous())
		must.False(t, c.CanRead("default"))
		must.False(t, c.Management())
	})
	t.Run("gets what the anonymous policy grants", func(t *testing.T) {
		h := newHarness(t, nil)
		h.nomad.policies["anonymous"] = `namespace "default" { policy = "read" }`
		c, err := h.auth.Authenticate(request(""))
		must.NoError(t, err)
		must.True(t, c.CanRead("default"))
		must.False(t, c.Allowed("default", acl.NamespaceCapabilitySubmitJob))
	})
}

func TestACLsDisabledAllowsEverything(t *testing.T) {
	h := newHarness(t, nil)
	h.nomad.disabled = true
	for _, secret := range []string{"", "whatever"} {
		c, err := h.auth.Authenticate(request(secret))
		must.NoError(t, err)
		must.True(t, c.ACLsDisabled())
		must.True(t, c.Management())
		must.True(t, c.Allowed("ml-prod", acl.NamespaceCapabilitySubmitJob))
	}
}

func TestRefusals(t *testing.T) {
	h := newHarness(t, nil)
	expired := h.nomad.token("expired", "client")
	past := h.clock.Now().Add(-time.Second)
	expired.ExpirationTime = &past
	cases := map[string]struct {
		secret string
		want   error
		text   string
	}{
		"unknown token":              {secret: "nope", want: ErrTokenNotFound, text: "ACL token not found"},
		"workload identity JWT":      {secret: "eyJhbGciOi.x.y", want: ErrTokenNotFound, text: "ACL token not found"},
		"expired token (self is ok)": {secret: "expired", want: ErrTokenExpired, text: "ACL token expired"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := h.auth.Authenticate(request(tc.secret))
			must.ErrorIs(t, err, tc.want)
			must.ErrorIs(t, err, ErrPermissionDenied)
			must.Eq(t, http.StatusForbidden, Status(err))
			must.Eq(t, tc.text, Message(err))
		})
	}
}

func TestRevokedTokenStopsWithinTTL(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.TTL = 5 * time.Second })
	h.nomad.policies["tenant-ml-research"] = tenantRules
	h.nomad.token("tenant", "client", "tenant-ml-research")
	_, err := h.auth.Authenticate(request("tenant"))
	must.NoError(t, err)
	asked := h.nomad.requests.Load()
	h.nomad.revoke("tenant")
	h.clock.Add(4 * time.Second)
	_, err = h.auth.Authenticate(request("tenant"))
	must.NoError(t, err, must.Sprint("cached within the TTL"))
	must.Eq(t, asked, h.nomad.requests.Load(), must.Sprint("a cached answer asks Nomad nothing"))
	h.clock.Add(time.Second)
	_, err = h.auth.Authenticate(request("tenant"))
	must.ErrorIs(t, err, ErrTokenNotFound, must.Sprint("revoked: refused once the TTL has passed"))
}

func TestTokenExpiringBeforeTTLIsDroppedAtExpiry(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.TTL = time.Minute })
	tok := h.nomad.token("short", "management")
	exp := h.clock.Now().Add(2 * time.Second)
	tok.ExpirationTime = &exp
	_, err := h.auth.Authenticate(request("short"))
	must.NoError(t, err)
	h.clock.Add(2 * time.Second)
	_, err = h.auth.Authenticate(request("short"))
	must.ErrorIs(t, err, ErrTokenExpired)
}

func TestCacheIsBounded(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxEntries = 3 })
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		h.nomad.token(s, "management")
		_, err := h.auth.Authenticate(request(s))
		must.NoError(t, err)
	}
	must.Eq(t, 3, h.auth.cache.len())
	asked := h.nomad.requests.Load()
	_, err := h.auth.Authenticate(request("a"))
	must.NoError(t, err)
	must.Eq(t, asked+1, h.nomad.requests.Load(), must.Sprint("the oldest entry was evicted"))
	_, err = h.auth.Authenticate(request("e"))
	must.NoError(t, err)
	must.Eq(t, asked+1, h.nomad.requests.Load(), must.Sprint("the newest entry is still cached"))
}

func TestConcurrentLookupsShareOne(t *testing.T) {
	h := newHarness(t, nil)
	h.nomad.token("root", "management")
	h.nomad.gate, h.nomad.arrived = make(chan struct{}), make(chan struct{}, 16)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.auth.Authenticate(request("root"))
			errs <- err
		}()
	}
	select {
	case <-h.nomad.arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("no lookup reached Nomad")
	}
	close(h.nomad.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		must.NoError(t, err)
	}
	must.Eq(t, int64(1), h.nomad.requests.Load())
}

// TestAudit30_UnavailableIsNotCachedAndHidesNomadsAddress: audit #30, an
// error the caller sees never names Nomad's internal address.
func TestAudit30_UnavailableIsNotCachedAndHidesNomadsAddress(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1") // nothing listens on port 1
	a := New(Options{Nomad: u, Timeout: 2 * time.Second})
	_, err := a.Authenticate(request("x"))
	must.ErrorIs(t, err, ErrUnavailable)
	must.Eq(t, http.StatusServiceUnavailable, Status(err))
	must.StrNotContains(t, Message(err), "127.0.0.1")
	must.Eq(t, 0, a.cache.len())
}

func TestClientCertRequired(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RequireClientCert = true })
	h.nomad.token("root", "management")
	cases := map[string]struct {
		tls  *tls.ConnectionState
		want error
	}{
		"plain HTTP":           {want: ErrClientCertRequired},
		"TLS without a cert":   {tls: &tls.ConnectionState{}, want: ErrClientCertRequired},
		"TLS, verified client": {tls: &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{}}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := request("root")
			r.TLS = tc.tls
			_, err := h.auth.Authenticate(r)
			if tc.want == nil {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, tc.want)
			must.Eq(t, http.StatusForbidden, Status(err))
		})
	}
	must.Eq(t, int64(1), h.nomad.requests.Load(), must.Sprint("refused before asking Nomad"))
}

func TestMetricsToken(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MetricsToken = "scrape-secret" })
	r := request("")
	r.Header.Set("Authorization", "Bearer scrape-secret")
	c, err := h.auth.Authenticate(r)
	must.NoError(t, err)
	must.True(t, c.Scrape())
	must.False(t, c.CanRead("ml-research"), must.Sprint("the scrape token reads metrics only"))
	must.False(t, c.Management())
	must.Eq(t, int64(0), h.nomad.requests.Load())
}

func TestMiddlewareAuthenticatesOnce(t *testing.T) {
	h := newHarness(t, nil)
	h.nomad.token("root", "management")
	var got *Caller
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = FromContext(r.Context())
		again, err := h.auth.Authenticate(r)
		must.NoError(t, err)
		must.Eq(t, got, again)
	})
	rec := httptest.NewRecorder()
	h.auth.Middleware(next, Deny).ServeHTTP(rec, request("root"))
	must.NotNil(t, got)
	must.True(t, got.Management())
	rec = httptest.NewRecorder()
	h.auth.Middleware(next, Deny).ServeHTTP(rec, request("bad"))
	must.Eq(t, http.StatusForbidden, rec.Code)
	must.Eq(t, "ACL token not found", rec.Body.String())
}

func TestStatusOfOtherErrors(t *testing.T) {
	must.Eq(t, http.StatusInternalServerError, Status(errors.New("boom")))
	must.Eq(t, "cannot authenticate the request", Message(errors.New("boom http://10.0.0.1")))
}

func TestCallerFromRules(t *testing.T) {
	c, err := CallerFromRules("t", tenantRules, `operator { policy = "read" }`)
	must.NoError(t, err)
	must.True(t, c.CanRead("ml-research"))
	must.False(t, c.CanRead("ml-prod"))
	must.True(t, c.OperatorRead())
	_, err = CallerFromRules("bad", `namespace "x" { policy = "sideways" }`)
	must.ErrorContains(t, err, "parsing policy rules")
	must.True(t, Unrestricted().Management())
	must.False(t, NewCaller("a", "n", nil).CanRead("x"))
	must.False(t, NewCaller("a", "n", nil).OperatorRead())
}
