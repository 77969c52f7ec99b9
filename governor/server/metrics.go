package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/metrics"
)

// metrics serves /metrics filtered for the caller (audit #27):
//   - the metrics token (auth.metrics_token), management tokens, tokens
//     with operator:read, and every caller when Nomad's ACLs are off see
//     every series;
//   - other tokens see the per-namespace series of the namespaces they may
//     read (read-job) and no cluster-wide series;
//   - a caller that may read no namespace gets 403.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	c, err := s.Auth.Authenticate(r)
	if err != nil {
		auth.Deny(w, err)
		return
	}
	all := c.Scrape() || c.OperatorRead()
	if !all && !s.readsAny(c) {
		auth.Deny(w, auth.ErrPermissionDenied)
		return
	}
	keep := func(ns string) bool { return all || c.CanRead(ns) }
	g := metrics.Filtered(s.Metrics.Registry, keep, all)
	promhttp.HandlerFor(g, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}
