package server

import (
	"net/http"

	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/ledger"
)

// LedgerReports answers the ledger's reports (governor/ledger.API).
type LedgerReports interface {
	Serve(kind string, w http.ResponseWriter, r *http.Request, c ledger.Caller)
}

// ledgerRoute serves one ledger report, restricted to the namespaces the
// caller may read (all of them, and the chain check, for management
// tokens). Capacity is per pool and model and names no tenant.
func (s *Server) ledgerRoute(kind string) func(http.ResponseWriter, *http.Request, *auth.Caller) {
	return func(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
		if s.Ledger == nil {
			writeErr(w, http.StatusNotFound, "the ledger is not configured (governor config: data_dir, or ledger { path = \"...\" })")
			return
		}
		lc := ledger.Caller{Management: c.Management()}
		if !lc.Management {
			lc.Namespaces = []string{}
			for _, ns := range s.Store.Namespaces() {
				if c.CanRead(ns) {
					lc.Namespaces = append(lc.Namespaces, ns)
				}
			}
		}
		s.Ledger.Serve(kind, w, r, lc)
	}
}
