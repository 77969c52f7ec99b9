package proxy

import "strings"

// Kind is what a request to /v1/* is, for the proxy.
type Kind int

const (
	// Passthrough requests go to Nomad unchanged.
	Passthrough Kind = iota
	// Register is a job register or update (PUT|POST /v1/jobs, /v1/job/<id>).
	Register
	// Plan is PUT|POST /v1/job/<id>/plan.
	Plan
	// Scale is PUT|POST /v1/job/<id>/scale.
	Scale
	// Dispatch is PUT|POST /v1/job/<id>/dispatch.
	Dispatch
	// Revert is PUT|POST /v1/job/<id>/revert.
	Revert
)

// String names the kind.
func (k Kind) String() string {
	return [...]string{"passthrough", "register", "plan", "scale", "dispatch", "revert"}[k]
}

// jobSuffixes are the sub-resources of /v1/job/<id>/… in the order Nomad
// 1.6.1's JobSpecificRequest tests them; a path ending in none of them is
// the job itself. Matching by suffix, exactly as Nomad does, accepts every
// character a job ID may hold (_ . uppercase, even /).
var jobSuffixes = []struct {
	suffix string
	kind   Kind
}{
	{"/evaluate", Passthrough}, {"/allocations", Passthrough}, {"/evaluations", Passthrough},
	{"/periodic/force", Passthrough}, {"/plan", Plan}, {"/summary", Passthrough},
	{"/dispatch", Dispatch}, {"/versions", Passthrough}, {"/revert", Revert},
	{"/deployments", Passthrough}, {"/deployment", Passthrough}, {"/stable", Passthrough},
	{"/scale", Scale}, {"/services", Passthrough}, {"/submission", Passthrough},
}

// Classify tells what a request is and, for job routes, the job ID. path
// is the decoded URL path.
func Classify(method, path string) (Kind, string) {
	if method != "PUT" && method != "POST" {
		return Passthrough, ""
	}
	if path == "/v1/jobs" {
		return Register, ""
	}
	rest, ok := strings.CutPrefix(path, "/v1/job/")
	if !ok || rest == "" {
		return Passthrough, ""
	}
	for _, s := range jobSuffixes {
		if id, ok := strings.CutSuffix(rest, s.suffix); ok {
			return s.kind, id
		}
	}
	return Register, rest
}
