package server

import (
	"net/http"
	"testing"

	"github.com/shoenig/test/must"
)

// TestDebugProfilerManagementOnly: with Debug on, the profiler's index,
// CPU profile and execution trace answer a management token only; with
// it off they are not mounted. A duration that is not a number of
// seconds in (0, 60] is refused (Go's profiler would take it as its
// default, or run as long as asked).
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
				status, _ := get(t, tc.base+path, tc.token)
				must.Eq(t, tc.want, status)
			})
		}
	}
	for _, bad := range []string{"abc", "-1", "0", "NaN", "1e999", "3600", "%00", ""} {
		for _, what := range []string{"profile", "trace", "heap"} {
			t.Run("seconds="+bad+" "+what, func(t *testing.T) {
				status, _ := get(t, on.URL+"/debug/pprof/"+what+"?seconds="+bad, "root")
				must.Eq(t, http.StatusBadRequest, status)
			})
		}
	}
}
