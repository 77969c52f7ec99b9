package server

import (
	"context"
	"net/http"
	"time"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
)

// membersTimeout bounds listing the members in Consul for one request.
const membersTimeout = 3 * time.Second

// HA is the governor's view of the election (governor/agent over
// governor/ha); nil for a single governor.
type HA interface {
	// State is the answering governor's HA state without the members (no
	// I/O).
	State() allotapi.Status
	// Members lists the live governors.
	Members(ctx context.Context) ([]allotapi.Member, error)
}

// health answers /healthz: the process is alive and serving. Readiness
// is /readyz.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// ready answers /readyz: 200 when this governor can do its part, 503 with
// the reason otherwise. A governor is ready once synced with Nomad and a
// decision cycle ran (its reads answer); under HA a standby also needs to
// know the leader it forwards admissions to.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ok, reason := s.readiness()
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, map[string]string{"status": reason})
}

// readiness is /readyz's verdict and reason.
func (s *Server) readiness() (bool, string) {
	if !s.Store.Synced() {
		return false, "syncing with Nomad"
	}
	if s.Plans.Latest() == nil {
		return false, "no decision cycle yet" // reads need one, on a standby too
	}
	if s.HA == nil {
		return true, "ok"
	}
	st := s.HA.State()
	switch {
	case st.Leading:
		return true, "ok: leader"
	case st.Leader == nil:
		return false, "no leader elected: admissions are refused with 503 until one is"
	default:
		return true, "ok: standby, leader " + st.Leader.ID
	}
}

// status answers GET /allot/v1/status (any caller that may read a
// namespace: member URLs are internal addresses).
func (s *Server) status(w http.ResponseWriter, r *http.Request, _ *auth.Caller) {
	var st allotapi.Status
	if s.HA != nil {
		st = s.HA.State()
		ctx, cancel := context.WithTimeout(r.Context(), membersTimeout)
		defer cancel()
		ms, err := s.HA.Members(ctx)
		if err != nil {
			st.MembersError = err.Error()
		}
		st.Members = ms
	}
	if st.Members == nil {
		st.Members = []allotapi.Member{}
	}
	st.Ready, st.Reason = s.readiness()
	writeJSON(w, http.StatusOK, st)
}
