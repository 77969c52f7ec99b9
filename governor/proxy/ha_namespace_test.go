package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// reached tells whether the fake Nomad received a request (method + path).
func (f *fakeNomad) reached(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.bodies[key]
	return ok
}

// send sends one request with the caller's token and returns its status,
// Retry-After and body.
func send(t *testing.T, method, url, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	must.NoError(t, err)
	req.Header.Set("X-Nomad-Token", "caller-secret")
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(data)
}

// namespaceWrites are Nomad 1.6.1's namespace write routes.
var namespaceWrites = map[string]struct{ method, path, body string }{
	"PUT /v1/namespace":       {"PUT", "/v1/namespace", `{"Name":"ml","Meta":{"allot.quota.gpu":"2"}}`},
	"POST /v1/namespace":      {"POST", "/v1/namespace", `{"Name":"ml","Meta":{"allot.quota.gpu":"2"}}`},
	"PUT /v1/namespace/ml":    {"PUT", "/v1/namespace/ml", `{"Name":"ml","Meta":{"allot.quota.gpu":"3"}}`},
	"POST /v1/namespace/ml":   {"POST", "/v1/namespace/ml", `{"Name":"ml","Meta":{"allot.quota.gpu":"3"}}`},
	"DELETE /v1/namespace/ml": {"DELETE", "/v1/namespace/ml", ""},
}

func TestHAStandbyForwardsNamespaceWrites(t *testing.T) {
	for name, tc := range namespaceWrites {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			leader := newLeaderStub(t)
			f.proxy.lead = &fakeLead{leader: leader.srvURL}
			status, _, out := send(t, tc.method, f.srv.URL+tc.path, tc.body)
			must.Eq(t, 200, status)
			must.StrContains(t, out, "from-leader")
			must.Eq(t, []string{name}, leader.paths)
			must.Eq(t, []string{"caller-secret"}, leader.tokens, must.Sprint("the caller's token, unchanged"))
			must.Eq(t, []string{"gov-b"}, leader.fwdBy)
			must.Eq(t, tc.body, leader.bodies[0], must.Sprint("the body as the caller sent it"))
			must.False(t, f.nomad.reached(name), must.Sprint("nothing reaches Nomad from a standby"))
		})
	}
}

func TestHANamespaceWriteWithoutLeaderIs503(t *testing.T) {
	for name, tc := range namespaceWrites {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			f.proxy.lead = &fakeLead{expires: time.Now().Add(time.Hour)}
			status, retry, msg := send(t, tc.method, f.srv.URL+tc.path, tc.body)
			must.Eq(t, http.StatusServiceUnavailable, status)
			must.Eq(t, "1", retry)
			must.StrContains(t, msg, "nothing was sent to Nomad, retry in a moment")
			must.False(t, f.nomad.reached(name), must.Sprint("nothing reaches Nomad without a leader"))
		})
	}
}

func TestHALeaderSendsNamespaceWritesToNomad(t *testing.T) {
	for name, tc := range namespaceWrites {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			leader := newLeaderStub(t)
			f.proxy.lead = &fakeLead{lead: true, epoch: 4, leader: leader.srvURL, expires: time.Now().Add(time.Hour)}
			status, _, _ := send(t, tc.method, f.srv.URL+tc.path, tc.body)
			must.Eq(t, 200, status)
			must.True(t, f.nomad.reached(name))
			must.Eq(t, tc.body, string(f.nomad.body(name)))
			must.Nil(t, leader.paths, must.Sprint("the leader forwards nothing"))
		})
	}
}

func TestHANamespaceReadsPassThroughOnStandby(t *testing.T) {
	for _, key := range []string{"GET /v1/namespace/ml", "GET /v1/namespaces"} {
		t.Run(key, func(t *testing.T) {
			f := newFixture(t, true)
			leader := newLeaderStub(t)
			f.proxy.lead = &fakeLead{leader: leader.srvURL}
			method, path, _ := strings.Cut(key, " ")
			status, _, _ := send(t, method, f.srv.URL+path, "")
			must.Eq(t, 200, status)
			must.True(t, f.nomad.reached(key), must.Sprint("a standby answers reads from Nomad"))
			must.Nil(t, leader.paths, must.Sprint("reads are not forwarded"))
		})
	}
}
