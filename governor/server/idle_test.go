package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
)

// fakeIdle answers with one candidate per namespace the caller may read.
type fakeIdle struct{}

func (fakeIdle) Answer(canRead func(string) bool, management bool) allotapi.IdleAnswer {
	out := allotapi.IdleAnswer{Candidates: []allotapi.IdleCandidate{}}
	for _, ns := range []string{"ml", "other"} {
		if management || canRead(ns) {
			out.Candidates = append(out.Candidates, allotapi.IdleCandidate{Namespace: ns, JobID: "j"})
		}
	}
	return out
}

func TestIdleSeesOnlyReadableNamespaces(t *testing.T) {
	_, srv := testServer(t, samplePlan(), true, func(s *Server) { s.Idle = fakeIdle{} })
	for token, want := range map[string]int{"ml": 1, "root": 2} {
		code, body := get(t, srv.URL+"/allot/v1/idle", token)
		must.Eq(t, http.StatusOK, code)
		var a allotapi.IdleAnswer
		must.NoError(t, json.Unmarshal([]byte(body), &a))
		must.Len(t, want, a.Candidates, must.Sprint(token))
	}
	code, _ := get(t, srv.URL+"/allot/v1/idle", "nobody-knows-me")
	must.Eq(t, http.StatusForbidden, code)
}

func TestIdleNotConfigured(t *testing.T) {
	_, srv := testServer(t, samplePlan(), true, nil)
	code, body := get(t, srv.URL+"/allot/v1/idle", "ml")
	must.Eq(t, http.StatusNotFound, code)
	must.StrContains(t, body, "idle detection is not configured")
}
