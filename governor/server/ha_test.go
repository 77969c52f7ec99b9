package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/metrics"
	"github.com/allot-sh/allot/governor/quota"
)

// fakeHA is an election state a test sets.
type fakeHA struct {
	st      allotapi.Status
	members []allotapi.Member
	err     error
}

func (f fakeHA) State() allotapi.Status { return f.st }

func (f fakeHA) Members(context.Context) ([]allotapi.Member, error) { return f.members, f.err }

func TestReadiness(t *testing.T) {
	leader := &allotapi.Member{ID: "gov-a", URL: "http://127.0.0.1:4680"}
	cases := map[string]struct {
		plan   bool
		synced bool
		ha     HA
		code   int
		reason string
	}{
		"single governor before sync":    {code: 503, reason: "syncing with Nomad"},
		"single governor before a cycle": {synced: true, code: 503, reason: "no decision cycle yet"},
		"single governor ready":          {synced: true, plan: true, code: 200, reason: "ok"},
		"HA leader":                      {synced: true, plan: true, ha: fakeHA{st: allotapi.Status{HA: true, Leading: true}}, code: 200, reason: "ok: leader"},
		"HA standby knowing the leader":  {synced: true, plan: true, ha: fakeHA{st: allotapi.Status{HA: true, Leader: leader}}, code: 200, reason: "ok: standby, leader gov-a"},
		"HA standby before a cycle":      {synced: true, ha: fakeHA{st: allotapi.Status{HA: true, Leader: leader}}, code: 503, reason: "no decision cycle yet"},
		"HA without a leader":            {synced: true, plan: true, ha: fakeHA{st: allotapi.Status{HA: true}}, code: 503, reason: "no leader elected"},
		"HA standby still syncing":       {ha: fakeHA{st: allotapi.Status{HA: true, Leader: leader}}, code: 503, reason: "syncing with Nomad"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := samplePlan()
			if !tc.plan {
				p = nil
			}
			_, srv := testServer(t, p, tc.synced, func(s *Server) { s.HA = tc.ha })
			resp, err := http.Get(srv.URL + "/readyz")
			must.NoError(t, err)
			var out map[string]string
			must.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
			resp.Body.Close()
			must.Eq(t, tc.code, resp.StatusCode)
			must.StrContains(t, out["status"], tc.reason)
			if tc.code == 503 {
				must.Eq(t, "1", resp.Header.Get("Retry-After"))
			}
			alive, err := http.Get(srv.URL + "/healthz")
			must.NoError(t, err)
			alive.Body.Close()
			must.Eq(t, http.StatusOK, alive.StatusCode, must.Sprint("alive whatever the readiness"))
		})
	}
}

// TestReadinessWaitsForNamespaces: a full listing without the namespaces
// is not ready: until they load the governor cannot tell tenants from
// other namespaces (TestE2E_DevUp once listed no tenant right after
// /readyz said ok).
func TestReadinessWaitsForNamespaces(t *testing.T) {
	store := cluster.NewStore(quota.NewBook([]string{"standard"}), nil)
	store.Reset(&cluster.Initial{})
	s := &Server{Plans: fixedPlan{samplePlan()}, Store: store, Proxy: http.NotFoundHandler(), Metrics: metrics.New(),
		Auth: fakeAuth{t}, Log: hclog.NewNullLogger()}
	ok, reason := s.readiness()
	must.False(t, ok)
	must.Eq(t, "syncing with Nomad", reason)
	store.SetNamespaces([]*api.Namespace{{Name: "ml"}})
	ok, reason = s.readiness()
	must.True(t, ok)
	must.Eq(t, "ok", reason)
}

func TestStatus(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	leader := allotapi.Member{ID: "gov-a", URL: "http://127.0.0.1:4680", Leader: true}
	standby := allotapi.Member{ID: "gov-b", URL: "http://127.0.0.1:4681"}
	t.Run("HA", func(t *testing.T) {
		c := newServer(t, samplePlan(), true)
		_, srv := testServer(t, samplePlan(), true, func(s *Server) {
			s.HA = fakeHA{st: allotapi.Status{HA: true, Member: "gov-b", Term: 12, Leader: &leader, Since: since},
				members: []allotapi.Member{leader, standby}}
		})
		c.Address = srv.URL
		st, err := c.Status(context.Background())
		must.NoError(t, err)
		must.Eq(t, &allotapi.Status{HA: true, Member: "gov-b", Term: 12, Leader: &leader, Since: since,
			Members: []allotapi.Member{leader, standby}, Ready: true, Reason: "ok: standby, leader gov-a"}, st)
	})
	t.Run("members unreachable", func(t *testing.T) {
		c := newServer(t, samplePlan(), true)
		_, srv := testServer(t, samplePlan(), true, func(s *Server) {
			s.HA = fakeHA{st: allotapi.Status{HA: true, Member: "gov-b"}, err: errors.New("consul: connection refused")}
		})
		c.Address = srv.URL
		st, err := c.Status(context.Background())
		must.NoError(t, err)
		must.Eq(t, "consul: connection refused", st.MembersError)
		must.SliceEmpty(t, st.Members)
		must.False(t, st.Ready)
	})
	t.Run("single governor", func(t *testing.T) {
		st, err := newServer(t, samplePlan(), true).Status(context.Background())
		must.NoError(t, err)
		must.False(t, st.HA)
		must.True(t, st.Ready)
	})
	t.Run("needs a token", func(t *testing.T) {
		_, srv := testServer(t, samplePlan(), true, nil)
		resp, err := http.Get(srv.URL + "/allot/v1/status")
		must.NoError(t, err)
		resp.Body.Close()
		must.Eq(t, http.StatusForbidden, resp.StatusCode)
	})
}

// countingHA lists members a test sets and counts the listings.
type countingHA struct {
	mu      sync.Mutex
	members []allotapi.Member
	calls   int
	release chan struct{} // when set, each listing waits for it
}

func (f *countingHA) State() allotapi.Status { return allotapi.Status{HA: true, Member: "gov-a"} }

func (f *countingHA) Members(context.Context) ([]allotapi.Member, error) {
	f.mu.Lock()
	f.calls++
	ms, release := f.members, f.release
	f.mu.Unlock()
	if release != nil {
		<-release
	}
	return ms, nil
}

func (f *countingHA) set(ms ...allotapi.Member) {
	f.mu.Lock()
	f.members = ms
	f.mu.Unlock()
}

func (f *countingHA) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// TestStatusMembersCache: concurrent status requests share one listing of
// the members, and a change in the members shows once the listing is
// membersTTL old.
func TestStatusMembersCache(t *testing.T) {
	a := allotapi.Member{ID: "gov-a", URL: "http://127.0.0.1:4680"}
	b := allotapi.Member{ID: "gov-b", URL: "http://127.0.0.1:4681"}
	ha := &countingHA{members: []allotapi.Member{a}, release: make(chan struct{})}
	var clockMu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }
	_, srv := testServer(t, samplePlan(), true, func(s *Server) {
		s.HA = ha
		s.Now = func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	})
	c := &allotapi.Client{Address: srv.URL, Token: "ml"}
	members := func() []allotapi.Member {
		st, err := c.Status(context.Background())
		must.NoError(t, err)
		return st.Members
	}

	const requests = 100
	var wg sync.WaitGroup
	got := make([][]allotapi.Member, requests)
	for i := range got {
		wg.Add(1)
		go func(i int) { defer wg.Done(); got[i] = members() }(i)
	}
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return ha.count() > 0 }),
		wait.Timeout(10*time.Second), wait.Gap(time.Millisecond)))
	close(ha.release) // the first listing returns while the others wait for it
	wg.Wait()
	must.Eq(t, 1, ha.count(), must.Sprint("100 concurrent requests share one listing"))
	for _, ms := range got {
		must.Eq(t, []allotapi.Member{a}, ms)
	}

	ha.set(a, b)
	advance(membersTTL - time.Millisecond)
	must.Eq(t, []allotapi.Member{a}, members(), must.Sprint("within the TTL: the cached listing"))
	must.Eq(t, 1, ha.count())
	advance(time.Millisecond)
	must.Eq(t, []allotapi.Member{a, b}, members(), must.Sprint("at the TTL: listed again"))
	must.Eq(t, 2, ha.count())
}
