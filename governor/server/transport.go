package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/auth"
)

// Timeouts bound normal requests (audit #17). The server's own
// ReadHeaderTimeout and IdleTimeout are set on the http.Server (agent);
// these are per request, so that streams can be exempt.
type Timeouts struct {
	// Read bounds reading the request body, from when the handler starts.
	Read time.Duration
	// Write bounds writing the answer, from when the handler starts.
	Write time.Duration
}

// transport wraps every route: the client-certificate requirement, then
// per-request deadlines.
func (s *Server) transport(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.RequireClientCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			auth.Deny(w, auth.ErrClientCertRequired)
			return
		}
		s.deadlines(w, r)
		next.ServeHTTP(w, r)
	})
}

// deadlines sets this request's read and write deadlines. A stream gets
// none, explicitly: a keep-alive connection must not carry the previous
// request's deadline into a stream (the http.Server clears write
// deadlines between requests only in recent Go releases).
func (s *Server) deadlines(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	var read, write time.Time
	if !IsStream(r) {
		now := time.Now()
		if s.Timeouts.Read > 0 {
			read = now.Add(s.Timeouts.Read)
		}
		if s.Timeouts.Write > 0 {
			write = now.Add(s.Timeouts.Write)
		}
	}
	// Errors mean the writer cannot set deadlines (a test recorder); the
	// server's own timeouts then still apply.
	_ = rc.SetReadDeadline(read)
	_ = rc.SetWriteDeadline(write)
}

// streamPrefixes are Nomad API paths whose answers stream for as long as
// the caller wants: the event stream, agent monitor and pprof, client
// file system (logs -f, fs stream, cat of big files) and operator
// snapshots; allocation exec (a websocket) is matched by its suffix.
var streamPrefixes = []string{
	"/v1/event/stream",
	"/v1/agent/monitor",
	"/v1/agent/pprof/",
	"/v1/client/fs/",
	"/v1/operator/snapshot",
}

// IsStream reports whether r is a streaming or long-lived request that
// must not get read/write deadlines: the paths above, websocket upgrades,
// and blocking queries (GET with ?index=; Nomad holds them up to ?wait=,
// at most 10 minutes).
func IsStream(r *http.Request) bool {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return true
	}
	if strings.HasPrefix(r.URL.Path, "/v1/client/allocation/") && strings.HasSuffix(r.URL.Path, "/exec") {
		return true
	}
	for _, p := range streamPrefixes {
		if strings.HasPrefix(r.URL.Path, p) {
			return true
		}
	}
	if r.Method == http.MethodGet {
		if idx := r.URL.Query().Get("index"); idx != "" && idx != "0" {
			return true
		}
	}
	return false
}
