package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/console"
	"github.com/allot-sh/allot/governor/engine"
)

// TestConsoleQueueIsTheAPIsAnswer: the console's queue (no JSON round
// trip) is byte for byte what GET /allot/v1/queue answers the same token,
// refusals included.
func TestConsoleQueueIsTheAPIsAnswer(t *testing.T) {
	s, srv := testServer(t, samplePlan(), true, nil)
	for _, token := range []string{"ml", "root", "off", "ops", ""} {
		t.Run("token "+token, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/allot/v1/queue", nil)
			must.NoError(t, err)
			req.Header.Set("X-Nomad-Token", token)
			resp, err := http.DefaultClient.Do(req)
			must.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			must.NoError(t, err)
			resp.Body.Close()

			c, err := fakeAuth{t}.Authenticate(req)
			must.NoError(t, err)
			got, err := s.consoleQueue(c)
			if resp.StatusCode != http.StatusOK {
				var ae *console.APIError
				must.True(t, errors.As(err, &ae))
				must.Eq(t, resp.StatusCode, ae.Status)
				must.StrContains(t, string(body), ae.Msg)
				return
			}
			must.NoError(t, err)
			for i, e := range got.Jobs {
				must.Nil(t, e.Request)
				must.Nil(t, e.ReasonCheck)
				got.Jobs[i].Request = s.request(e.Namespace, e.JobID)
				got.Jobs[i].ReasonCheck = s.reasonCheck(c, e.Namespace, e.JobID, e.Reason)
			}
			direct, err := json.Marshal(got)
			must.NoError(t, err)
			must.Eq(t, string(body), string(direct)+"\n")
		})
	}
	s.Plans = fixedPlan{(*engine.Plan)(nil)}
	c, err := fakeAuth{t}.Authenticate(&http.Request{Header: http.Header{"X-Nomad-Token": {"root"}}})
	must.NoError(t, err)
	_, err = s.consoleQueue(c)
	var ae *console.APIError
	must.True(t, errors.As(err, &ae))
	must.Eq(t, http.StatusServiceUnavailable, ae.Status)
}
