package proxy

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/hahttp"
)

func TestForwardToLeader(t *testing.T) {
	const path = "/allot/v1/jobs/ml/train/requeue"
	leader := newLeaderStub(t)
	tests := map[string]struct {
		lead      *fakeLead
		forwarded bool
		answered  bool
		status    int
		fwd       []string
	}{
		"single governor":       {answered: false},
		"the leader handles it": {lead: &fakeLead{lead: true, epoch: 2}, answered: false},
		// A tenant's own X-Allot-Forwarded-By cannot make the leader skip
		// the requeue: it still handles it itself.
		"a caller's header on the leader": {lead: &fakeLead{lead: true, epoch: 2}, forwarded: true, answered: false},
		"a standby forwards":              {lead: &fakeLead{leader: leader.srvURL}, answered: true, status: http.StatusOK, fwd: []string{"POST " + path}},
		"no leader known":                 {lead: &fakeLead{}, answered: true, status: http.StatusServiceUnavailable},
		"forwarded once already":          {lead: &fakeLead{leader: leader.srvURL}, forwarded: true, answered: true, status: http.StatusServiceUnavailable},
		"the leader cannot be reached":    {lead: &fakeLead{leader: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}}, answered: true, status: http.StatusServiceUnavailable},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			leader.mu.Lock()
			leader.paths, leader.tokens, leader.fwdBy, leader.bodies = nil, nil, nil, nil
			leader.mu.Unlock()
			f := newFixture(t, true)
			if tc.lead != nil {
				tc.lead.expires = time.Now().Add(time.Hour)
				f.proxy.lead = tc.lead
			}
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"reason":"drain"}`))
			req.Header.Set("X-Nomad-Token", "caller-secret")
			if tc.forwarded {
				req.Header.Set(hahttp.ForwardedHeader, "gov-a")
			}
			rec := httptest.NewRecorder()
			must.Eq(t, tc.answered, f.proxy.ForwardToLeader(rec, req))
			leader.mu.Lock()
			defer leader.mu.Unlock()
			must.Eq(t, tc.fwd, leader.paths)
			if !tc.answered {
				return
			}
			must.Eq(t, tc.status, rec.Code)
			if tc.status == http.StatusServiceUnavailable {
				must.Eq(t, "1", rec.Header().Get("Retry-After"))
				return
			}
			must.Eq(t, []string{"caller-secret"}, leader.tokens, must.Sprint("the caller's token, unchanged"))
			must.Eq(t, []string{"gov-b"}, leader.fwdBy)
			must.Eq(t, []string{`{"reason":"drain"}`}, leader.bodies)
		})
	}
}
