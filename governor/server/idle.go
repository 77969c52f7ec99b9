package server

import (
	"net/http"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
)

// IdleReports answers /allot/v1/idle (governor/idle.Service).
type IdleReports interface {
	Answer(canRead func(ns string) bool, management bool) allotapi.IdleAnswer
}

// idle serves the idle ladder, restricted to the namespaces the caller
// may read; zombies for management tokens only.
func (s *Server) idle(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	if r.Method != http.MethodGet {
		writeErr(w, http.StatusMethodNotAllowed, "GET only")
		return
	}
	if s.Idle == nil {
		writeErr(w, http.StatusNotFound, "idle detection is not configured (governor config: idle { ... })")
		return
	}
	allotapi.WriteJSON(w, http.StatusOK, s.Idle.Answer(c.CanRead, c.Management()))
}
