package server

import (
	"net/http"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/ledger"
)

// fakeLedger records the caller each report was asked for.
type fakeLedger struct{ got []ledger.Caller }

func (f *fakeLedger) Serve(kind string, w http.ResponseWriter, r *http.Request, c ledger.Caller) {
	f.got = append(f.got, c)
	w.WriteHeader(http.StatusOK)
}

// TestLedgerReportsSeeOnlyReadableNamespaces: the ledger is asked for the
// caller's readable namespaces only; management tokens see all of them.
func TestLedgerReportsSeeOnlyReadableNamespaces(t *testing.T) {
	fl := &fakeLedger{}
	_, srv := testServer(t, samplePlan(), true, func(s *Server) { s.Ledger = fl })
	for _, kind := range []string{"usage", "cost", "capacity", "audit"} {
		code, _ := get(t, srv.URL+"/allot/v1/"+kind, "ml")
		must.Eq(t, http.StatusOK, code)
	}
	code, _ := get(t, srv.URL+"/allot/v1/usage", "root")
	must.Eq(t, http.StatusOK, code)
	code, _ = get(t, srv.URL+"/allot/v1/usage", "nobody-knows-me")
	must.Eq(t, http.StatusForbidden, code)
	must.Len(t, 5, fl.got)
	must.Eq(t, ledger.Caller{Namespaces: []string{"ml"}}, fl.got[0])
	must.Eq(t, ledger.Caller{Management: true}, fl.got[4])
}

func TestLedgerNotConfigured(t *testing.T) {
	_, srv := testServer(t, samplePlan(), true, nil)
	code, body := get(t, srv.URL+"/allot/v1/usage", "ml")
	must.Eq(t, http.StatusNotFound, code)
	must.StrContains(t, body, "ledger is not configured")
}
