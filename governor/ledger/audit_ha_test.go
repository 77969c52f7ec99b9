package ledger

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/hahttp"
	"github.com/allot-sh/allot/governor/proxy"
)

// haLead is a fixed proxy.Leadership: the leader, or a standby that knows
// the leader's URL.
type haLead struct {
	lead   bool
	leader *url.URL
}

func (l haLead) Admitter() (bool, uint64, time.Time, *url.URL) {
	return l.lead, 1, time.Now().Add(time.Hour), l.leader
}
func (l haLead) Hold(uint64) (func(), bool) { return func() {}, l.lead }
func (l haLead) MemberID() string           { return map[bool]string{true: "gov-a", false: "gov-b"}[l.lead] }

// TestAuditorUnderHA: a namespace write sent to a standby is forwarded by
// its proxy to the leader, audited once, by the leader's auditor, with the
// caller; the standby's auditor writes nothing. The standby's auditor gets
// a database of its own here, so that any entry it made would show (on a
// shared one the leader's entry would hide it: same meta, no new entry).
func TestAuditorUnderHA(t *testing.T) {
	eachBackend(t, func(t *testing.T, db *DB) {
		var mu sync.Mutex
		var writes []string
		nomad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			writes = append(writes, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Nomad-Token"))
			mu.Unlock()
			_, _ = w.Write([]byte(`{"Index":7}`))
		}))
		t.Cleanup(nomad.Close)
		target, _ := url.Parse(nomad.URL)
		serve := func(db *DB, lead haLead) *httptest.Server {
			a := &Auditor{DB: db, Auth: fakeAuth{}, Now: func() time.Time { return at(5) }}
			px := proxy.New(proxy.Options{Target: target, Leadership: lead})
			srv := httptest.NewServer(a.Wrap(px))
			t.Cleanup(srv.Close)
			return srv
		}
		leader := serve(db, haLead{lead: true})
		leaderURL, _ := url.Parse(leader.URL)
		standbyDB := openSQLite(t)
		standby := serve(standbyDB, haLead{leader: leaderURL})

		body, _ := json.Marshal(api.Namespace{Name: "ml", Meta: map[string]string{"allot.quota.gpu": "4"}})
		req, err := http.NewRequest(http.MethodPut, standby.URL+"/v1/namespace/ml", strings.NewReader(string(body)))
		must.NoError(t, err)
		req.Header.Set("X-Nomad-Token", "s3cret")
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		resp.Body.Close()
		must.Eq(t, 200, resp.StatusCode)
		mu.Lock()
		must.Eq(t, []string{"PUT /v1/namespace/ml s3cret"}, writes, must.Sprint("Nomad gets the write once, with the caller's token"))
		mu.Unlock()

		es, err := db.Entries(context.Background(), AuditQuery{Kind: KindNamespaceMeta})
		must.NoError(t, err)
		must.Len(t, 1, es, must.Sprint("one change, one entry: the standby's auditor records nothing"))
		must.Eq(t, "acc-s3cret", es[0].Actor)
		must.Eq(t, "alice", es[0].ActorName)
		must.Eq(t, "allot.quota.gpu=\"4\"\n", es[0].New)
		es, err = standbyDB.Entries(context.Background(), AuditQuery{})
		must.NoError(t, err)
		must.Len(t, 0, es, must.Sprint("the standby writes nothing to the ledger"))
	})
}

// TestWrapKeepsForwardToLeader: the audited proxy still forwards the
// governor's own writes (requeue) to the leader; without it a standby
// with a ledger would answer them itself.
func TestWrapKeepsForwardToLeader(t *testing.T) {
	target, _ := url.Parse("http://127.0.0.1:1")
	a := &Auditor{Auth: fakeAuth{}}
	_, ok := a.Wrap(proxy.New(proxy.Options{Target: target})).(leaderForwarder)
	must.True(t, ok)
	_, ok = a.Wrap(http.NotFoundHandler()).(leaderForwarder)
	must.False(t, ok)
}

// TestAuditorIgnoresACallersForwardedHeader: X-Allot-Forwarded-By sent
// by a tenant cannot hide its namespace write from the audit log: the
// leader writes it to Nomad and records it with the caller; a standby
// refuses it (503, nothing sent to Nomad, nothing recorded) rather than
// forwarding it unaudited.
func TestAuditorIgnoresACallersForwardedHeader(t *testing.T) {
	var mu sync.Mutex
	var writes []string
	nomad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		writes = append(writes, r.Method+" "+r.URL.Path)
		mu.Unlock()
		_, _ = w.Write([]byte(`{"Index":7}`))
	}))
	t.Cleanup(nomad.Close)
	target, _ := url.Parse(nomad.URL)
	leaderURL, _ := url.Parse("http://127.0.0.1:1")
	tests := map[string]struct {
		lead    haLead
		status  int
		entries int
	}{
		"leader":  {lead: haLead{lead: true}, status: http.StatusOK, entries: 1},
		"standby": {lead: haLead{leader: leaderURL}, status: http.StatusServiceUnavailable, entries: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			writes = nil
			mu.Unlock()
			db := openSQLite(t)
			a := &Auditor{DB: db, Auth: fakeAuth{}, Now: func() time.Time { return at(5) }}
			h := a.Wrap(proxy.New(proxy.Options{Target: target, Leadership: tc.lead}))
			for _, by := range []string{"gov-a", "gov-b", "x"} {
				body, _ := json.Marshal(api.Namespace{Name: "ml", Meta: map[string]string{"allot.quota.gpu": by}})
				req := httptest.NewRequest(http.MethodPut, "/v1/namespace/ml", strings.NewReader(string(body)))
				req.Header.Set("X-Nomad-Token", "s3cret")
				req.Header.Set(hahttp.ForwardedHeader, by)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				must.Eq(t, tc.status, rec.Code)
			}
			mu.Lock()
			must.Eq(t, tc.entries*3, len(writes), must.Sprint("Nomad writes"))
			mu.Unlock()
			es, err := db.Entries(context.Background(), AuditQuery{Kind: KindNamespaceMeta})
			must.NoError(t, err)
			must.Len(t, tc.entries*3, es)
			for _, e := range es {
				must.Eq(t, "acc-s3cret", e.Actor)
			}
		})
	}
}
