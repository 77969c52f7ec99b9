package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/hahttp"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// fakeLead is a Leadership a test sets.
type fakeLead struct {
	mu      sync.Mutex
	lead    bool
	epoch   uint64
	leader  *url.URL
	calls   int
	onCall  func(l *fakeLead)
	expires time.Time
}

func (l *fakeLead) Admitter() (bool, uint64, time.Time, *url.URL) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.onCall != nil {
		l.onCall(l)
	}
	return l.lead, l.epoch, l.expires, l.leader
}

func (l *fakeLead) MemberID() string { return "gov-b" }

func (l *fakeLead) Hold(epoch uint64) (func(), bool) {
	lead, cur, _, _ := l.Admitter()
	if !lead || cur != epoch {
		return nil, false
	}
	return func() {}, true
}

// leaderStub records what a standby forwards to the leader.
type leaderStub struct {
	mu     sync.Mutex
	paths  []string
	tokens []string
	fwdBy  []string
	bodies []string
	srvURL *url.URL
}

func newLeaderStub(t *testing.T) *leaderStub {
	s := &leaderStub{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.paths = append(s.paths, r.Method+" "+r.URL.Path)
		s.tokens = append(s.tokens, r.Header.Get("X-Nomad-Token"))
		s.fwdBy = append(s.fwdBy, r.Header.Get(hahttp.ForwardedHeader))
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		_, _ = io.WriteString(w, `{"EvalID":"from-leader","JobModifyIndex":9}`)
	}))
	t.Cleanup(srv.Close)
	s.srvURL, _ = url.Parse(srv.URL)
	return s
}

func TestHAStandbyForwardsAdmissionsToTheLeader(t *testing.T) {
	f := newFixture(t, true)
	leader := newLeaderStub(t)
	f.proxy.lead = &fakeLead{leader: leader.srvURL}
	body := registerBody("ml", "train", 1)
	status, out := put(t, f.srv.URL+"/v1/jobs", body)
	must.Eq(t, 200, status)
	must.Eq(t, "from-leader", out["EvalID"].(string))
	must.Eq(t, []string{"PUT /v1/jobs"}, leader.paths)
	must.Eq(t, []string{"caller-secret"}, leader.tokens, must.Sprint("the caller's token, unchanged"))
	must.Eq(t, []string{"gov-b"}, leader.fwdBy)
	must.Eq(t, body, leader.bodies[0], must.Sprint("the body as the caller sent it"))
	must.Nil(t, f.nomad.body("PUT /v1/jobs"), must.Sprint("nothing reaches Nomad from a standby"))
	_, reserved := f.store.Job("ml", "train")
	must.False(t, reserved, must.Sprint("the standby reserves nothing"))
}

func TestHANoLeaderIs503(t *testing.T) {
	for name, lead := range map[string]*fakeLead{
		"no leader known":                {},
		"forwarded to a former leader":   {leader: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}},
		"the leader cannot be reached":   {leader: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}},
		"lost the lead before the write": {lead: true, epoch: 3, onCall: func(l *fakeLead) { l.lead = l.calls < 2 }},
		"a new term before the write lands": {lead: true, epoch: 3, onCall: func(l *fakeLead) {
			if l.calls > 1 {
				l.epoch = 4
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			lead.expires = time.Now().Add(time.Hour)
			f.proxy.lead = lead
			req, err := http.NewRequest("PUT", f.srv.URL+"/v1/jobs", strings.NewReader(registerBody("ml", "train", 1)))
			must.NoError(t, err)
			req.Header.Set("X-Nomad-Token", "caller-secret")
			if name == "forwarded to a former leader" {
				req.Header.Set(hahttp.ForwardedHeader, "gov-a")
			}
			resp, err := http.DefaultClient.Do(req)
			must.NoError(t, err)
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			must.Eq(t, http.StatusServiceUnavailable, resp.StatusCode)
			must.Eq(t, "1", resp.Header.Get("Retry-After"))
			must.StrContains(t, string(msg), "nothing was sent to Nomad, retry in a moment")
			must.Nil(t, f.nomad.body("PUT /v1/jobs"))
			_, reserved := f.store.Job("ml", "train")
			must.False(t, reserved, must.Sprint("no reservation is left behind"))
		})
	}
}

func TestHALeaderWritesCarryItsTerm(t *testing.T) {
	f := newFixture(t, true)
	f.proxy.lead = &fakeLead{lead: true, epoch: 7, expires: time.Now().Add(time.Hour)}
	req, err := http.NewRequest("PUT", f.srv.URL+"/v1/jobs", strings.NewReader(registerBody("ml", "train", 1)))
	must.NoError(t, err)
	req.Header.Set("X-Nomad-Token", "caller-secret")
	req.Header.Set(hahttp.EpochHeader, "999") // a caller cannot pose as a term
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, 200, resp.StatusCode)
	must.Eq(t, []string{"7"}, f.nomad.epochs)
	job := forwardedJob(t, f, "PUT /v1/jobs")
	must.Eq(t, "7", job["Meta"].(map[string]any)[jobmeta.Epoch].(string))
}

func TestHAPassthroughOnStandby(t *testing.T) {
	f := newFixture(t, true)
	f.proxy.lead = &fakeLead{}
	req, err := http.NewRequest("GET", f.srv.URL+"/v1/jobs", nil)
	must.NoError(t, err)
	req.Header.Set(hahttp.EpochHeader, "5")
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, 200, resp.StatusCode, must.Sprint("reads pass through on a standby, leader or not"))
	must.Eq(t, []string{""}, f.nomad.epochs, must.Sprint("a caller's epoch header is dropped"))
}
