package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/acl"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/quota"
	"github.com/allot-sh/allot/governor/reconcile"
)

// fakeAuth maps secrets to callers, as governor/auth would resolve them
// against a Nomad with these policies: "ml" reads namespace ml, "root" is
// a management token, "ops" has operator:read only, "scrape" is the
// metrics token, no token is an anonymous caller without a policy and
// anything else is unknown.
type fakeAuth struct{ t *testing.T }

func (f fakeAuth) Authenticate(r *http.Request) (*auth.Caller, error) {
	rules := map[string]string{
		"ml":  `namespace "ml" { policy = "read" }`,
		"ops": `operator { policy = "read" }`,
		"":    ``,
	}
	switch secret := auth.Token(r); secret {
	case "root":
		return auth.NewCaller("root", "root", acl.ManagementACL), nil
	case "off":
		return auth.Unrestricted(), nil
	default:
		rule, ok := rules[secret]
		if !ok {
			return nil, auth.ErrTokenNotFound
		}
		c, err := auth.CallerFromRules(secret, rule)
		must.NoError(f.t, err)
		return c, nil
	}
}

type fixedPlan struct{ p *engine.Plan }

func (f fixedPlan) Latest() *engine.Plan { return f.p }

// testServer builds a Server on a store that knows namespaces ml and
// secret; mod adjusts it before it serves.
func testServer(t *testing.T, p *engine.Plan, synced bool, mod func(*Server)) (*Server, *httptest.Server) {
	store := cluster.NewStore(quota.NewBook([]string{"low", "production", "standard"}), nil)
	store.SetNamespaces([]*api.Namespace{{Name: "ml"}, {Name: "secret"}})
	if synced {
		store.Reset(&cluster.Initial{})
	}
	s := &Server{Plans: fixedPlan{p}, Store: store, Proxy: http.NotFoundHandler(), Metrics: metrics.New(),
		Auth: fakeAuth{t}, Log: hclog.NewNullLogger()}
	if mod != nil {
		mod(s)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}

func newServer(t *testing.T, p *engine.Plan, synced bool) *allotapi.Client {
	_, srv := testServer(t, p, synced, nil)
	return &allotapi.Client{Address: srv.URL, Token: "ml"}
}

func newDecisionServer(t *testing.T, j *reconcile.Journal) *allotapi.Client {
	_, srv := testServer(t, samplePlan(), true, func(s *Server) {
		s.Journal = j
		s.Classes = map[string]engine.Class{
			"standard": {Priority: 50, Preemptible: true}, "production": {Priority: 90, Restricted: true},
			"low": {Priority: 30, Preemptible: true}, "also-low": {Priority: 30},
		}
	})
	return &allotapi.Client{Address: srv.URL, Token: "ml"}
}

var errBadMeta = errors.New("bad meta")
