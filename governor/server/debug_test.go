package server

import (
	"net/http"
	"testing"

	"github.com/shoenig/test/must"
)

// TestDebugProfilerManagementOnly: with Debug on, the profiler's index,
// CPU profile and execution trace answer a management token only; with
// it off they are not mounted.
func TestDebugProfilerManagementOnly(t *testing.T) {
	paths := []string{"/debug/pprof/", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=0.05"}
	_, on := testServer(t, samplePlan(), true, func(s *Server) { s.Debug = true })
	_, off := testServer(t, samplePlan(), true, nil)
	cases := []struct {
		name  string
		base  string
		token string
		want  int
	}{
		{"management token", on.URL, "root", http.StatusOK},
		{"namespace token", on.URL, "ml", http.StatusForbidden},
		{"operator:read token", on.URL, "ops", http.StatusForbidden},
		{"no token", on.URL, "", http.StatusForbidden},
		{"debug off", off.URL, "root", http.StatusNotFound},
	}
	for _, tc := range cases {
		for _, path := range paths {
			t.Run(tc.name+" "+path, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodGet, tc.base+path, nil)
				must.NoError(t, err)
				if tc.token != "" {
					req.Header.Set("X-Nomad-Token", tc.token)
				}
				resp, err := http.DefaultClient.Do(req)
				must.NoError(t, err)
				resp.Body.Close()
				must.Eq(t, tc.want, resp.StatusCode)
			})
		}
	}
}
