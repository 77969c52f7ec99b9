package proxy

import "net/http"

// ForwardToLeader routes one of the governor's own write requests outside
// /v1 (POST /allot/v1/jobs/<ns>/<id>/requeue, governor/server) the way
// admission requests go under HA. It reports whether it answered r:
// false without HA and on the leader (the caller handles r itself); on a
// standby it forwards r to the leader with the caller's headers (its
// token) and body unchanged and answers what the leader answers, or 503
// with Retry-After when no leader is known, the leader cannot be reached,
// or r was forwarded once already: routeHA's decision, r's term unused.
func (p *Proxy) ForwardToLeader(w http.ResponseWriter, r *http.Request) bool {
	return p.routeHA(w, r) == nil
}
