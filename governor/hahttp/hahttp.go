// Package hahttp holds what the governor's HTTP handlers share about
// forwarding under HA (docs/ha.md): the header a standby marks a forwarded
// request with, the header carrying a leader's term on its writes, and which requests are namespace writes (forwarded to the
// leader, audited by the leader's ledger). It imports nothing of Allot, so
// the proxy that forwards and the ledger's auditor that skips forwarded
// writes both read it without the data layer importing the proxy.
package hahttp

import (
	"net/http"
	"strings"
)

// ForwardedHeader marks an admission request or namespace write a standby
// forwarded to the leader: a governor that receives one and does not lead
// answers 503 rather than forwarding it again. The standby sets it on the
// request it serves, so a handler around the proxy (the ledger's auditor)
// sees that the leader handled it.
const ForwardedHeader = "X-Allot-Forwarded-By"

// EpochHeader carries the leader's term on every Nomad write a leading
// governor sends (the proxy's admissions and the actuator's writes,
// besides the allot.epoch meta of job registers), so a log of the writes
// Nomad received shows which term sent each. The proxy drops it from a
// caller's request: a caller cannot pose as a term.
const EpochHeader = "X-Allot-Epoch"

// NamespaceWrite reports whether a request writes a namespace, on Nomad
// 1.6.1's routes (command/agent/http.go, namespace_endpoint.go): PUT or
// POST /v1/namespace, PUT, POST or DELETE /v1/namespace/<name>. Under HA
// a standby forwards these to the leader like admissions, so the leader's
// auditor records every namespace change with its caller and a standby
// writes nothing to the ledger.
func NamespaceWrite(method, path string) bool {
	switch {
	case path == "/v1/namespace":
		return method == http.MethodPut || method == http.MethodPost
	case strings.HasPrefix(path, "/v1/namespace/"):
		return method == http.MethodPut || method == http.MethodPost || method == http.MethodDelete
	}
	return false
}
