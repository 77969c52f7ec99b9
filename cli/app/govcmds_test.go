package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
)

// fakeGovernor serves fixed /allot/v1/classes and /allot/v1/decisions.
func fakeGovernor(t *testing.T) string {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	mux := http.NewServeMux()
	mux.HandleFunc("/allot/v1/classes", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(allotapi.ClassList{Classes: []allotapi.Class{
			{Name: "production", Priority: 90, Restricted: true}, {Name: "low", Priority: 30, Preemptible: true}}})
	})
	mux.HandleFunc("/allot/v1/decisions", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(allotapi.DecisionList{Decisions: []allotapi.Decision{
			{Time: at.Add(time.Minute), Kind: "requeue", Cause: "gang-timeout", Namespace: "web", JobID: "gang", Reason: "gang timeout"},
			{Time: at, Kind: "preemption", Cause: "reclaim", Namespace: "team-b", JobID: "big", Reason: "tenant team-b reclaims",
				Victims: []allotapi.Victim{{Namespace: "team-a", JobID: "a1", Class: "low", LostWorkSeconds: 12.4}}},
		}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestClassAndDecisionsCommands(t *testing.T) {
	addr := fakeGovernor(t)
	tests := map[string]struct {
		args []string
		want string
	}{
		"class list": {args: []string{"class", "list"}, want: `Name        Priority  Preemptible  Restricted
production  90        no           yes
low         30        yes          no
`},
		"decisions": {args: []string{"decisions"}, want: `Time                  Kind        Cause         Job         Victims (lost work)  Reason
2026-01-01T12:01:00Z  requeue     gang-timeout  web/gang    -                    gang timeout
2026-01-01T12:00:00Z  preemption  reclaim       team-b/big  team-a/a1 (12s)      tenant team-b reclaims
`},
		"decisions of a victim's namespace": {args: []string{"decisions", "-namespace", "team-a"}, want: `Time                  Kind        Cause    Job         Victims (lost work)  Reason
2026-01-01T12:00:00Z  preemption  reclaim  team-b/big  team-a/a1 (12s)      tenant team-b reclaims
`},
		"decisions of another namespace": {args: []string{"decisions", "-namespace", "other"}, want: "No preemptions, requeues or holds recorded\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := run(append(tc.args, "-address", addr)...)
			must.Zero(t, code, must.Sprint(errOut))
			must.Eq(t, tc.want, out)
		})
	}
}

func TestClassListJSON(t *testing.T) {
	code, out, errOut := run("class", "list", "-json", "-address", fakeGovernor(t))
	must.Zero(t, code, must.Sprint(errOut))
	var got allotapi.ClassList
	must.NoError(t, json.Unmarshal([]byte(out), &got))
	must.Eq(t, []allotapi.Class{{Name: "production", Priority: 90, Restricted: true}, {Name: "low", Priority: 30, Preemptible: true}}, got.Classes)
}

func TestClassAndDecisionsErrors(t *testing.T) {
	code, _, errOut := run("decisions", "-address", refused)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "reading decisions from the governor at "+refused)
	code, _, errOut = run("class", "list", "-address", refused)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "reading the classes from the governor at "+refused)
	code, _, errOut = run("decisions", "extra", "-address", refused)
	must.Eq(t, 2, code, must.Sprint(errOut))
	must.StrContains(t, errOut, `decisions takes no arguments, got ["extra"]`)
}
