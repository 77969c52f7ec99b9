package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/auth"
)

// membersTimeout bounds one listing of the members in Consul.
const membersTimeout = 3 * time.Second

// membersTTL is how long GET /allot/v1/status answers one listing of the
// members: any tenant may call it, so requests share a listing rather than
// each asking Consul.
const membersTTL = 2 * time.Second

// membersCache holds the last listing of the members (or its error) for
// membersTTL. Its lock is held while listing, so concurrent requests
// share one Consul call: those that wait find the fresh listing.
type membersCache struct {
	mu  sync.Mutex
	at  time.Time // when ms and err were listed; zero: never
	ms  []allotapi.Member
	err error
}

// get returns the cached listing, or lists the members in ha when there is
// none younger than membersTTL on clock now. The listing runs on its own
// deadline, not a request's: a caller that gives up does not fail the
// others waiting for it.
func (c *membersCache) get(ha HA, now func() time.Time) ([]allotapi.Member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if age := now().Sub(c.at); !c.at.IsZero() && age >= 0 && age < membersTTL {
		return c.ms, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), membersTimeout)
	defer cancel()
	c.ms, c.err = ha.Members(ctx)
	c.at = now()
	return c.ms, c.err
}

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
	allotapi.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
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
	allotapi.WriteJSON(w, status, map[string]string{"status": reason})
}

// readiness is /readyz's verdict and reason.
func (s *Server) readiness() (bool, string) {
	if !s.Store.Ready() {
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
// namespace: member URLs are internal addresses). The members come from a
// listing at most membersTTL old.
func (s *Server) status(w http.ResponseWriter, r *http.Request, _ *auth.Caller) {
	var st allotapi.Status
	if s.HA != nil {
		st = s.HA.State()
		ms, err := s.members.get(s.HA, s.now)
		if err != nil {
			st.MembersError = err.Error()
		}
		st.Members = ms
	}
	if st.Members == nil {
		st.Members = []allotapi.Member{}
	}
	st.Ready, st.Reason = s.readiness()
	allotapi.WriteJSON(w, http.StatusOK, st)
}
