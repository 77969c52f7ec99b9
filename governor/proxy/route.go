package proxy

import "strings"

// Kind is what a request to /v1/* is, for the proxy.
type Kind int

const (
	// Passthrough requests go to Nomad unchanged: they cannot create or
	// grow allocations (docs/governor.md lists every route and why).
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
	// PeriodicForce is PUT|POST /v1/job/<id>/periodic/force: it launches a
	// child of a periodic job now.
	PeriodicForce
)

// String names the kind.
func (k Kind) String() string {
	return [...]string{"passthrough", "register", "plan", "scale", "dispatch", "revert", "periodic-force"}[k]
}

// Capabilities are the Nomad ACL namespace capabilities of which the
// caller must hold one, in the namespace Nomad will use, before the proxy
// does any admission work for a request of this kind: the same ones
// Nomad 1.6.1 demands for the RPC the route makes (Job.Register, Job.Plan,
// Job.Scale, Job.Dispatch, Job.Revert, Periodic.Force).
func (k Kind) Capabilities() []string {
	switch k {
	case Register, Plan, Revert:
		return []string{"submit-job"}
	case Scale:
		return []string{"scale-job", "submit-job"}
	case Dispatch:
		return []string{"dispatch-job"}
	case PeriodicForce:
		return []string{"dispatch-job", "submit-job"}
	}
	return nil
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
	{"/periodic/force", PeriodicForce}, {"/plan", Plan}, {"/summary", Passthrough},
	{"/dispatch", Dispatch}, {"/versions", Passthrough}, {"/revert", Revert},
	{"/deployments", Passthrough}, {"/deployment", Passthrough}, {"/stable", Passthrough},
	{"/scale", Scale}, {"/services", Passthrough}, {"/submission", Passthrough},
}

// Classify tells what a request is and, for job routes, the job ID. path
// is the decoded URL path, as Nomad's mux routes on it.
func Classify(method, path string) (Kind, string) {
	if method != "PUT" && method != "POST" {
		return Passthrough, ""
	}
	if path == "/v1/jobs" {
		return Register, ""
	}
	rest, ok := strings.CutPrefix(path, "/v1/job/")
	if !ok {
		return Passthrough, ""
	}
	// "/v1/job/" itself is a register for Nomad: jobCRUD with an empty ID
	// skips the path-vs-body ID check.
	for _, s := range jobSuffixes {
		if id, ok := strings.CutSuffix(rest, s.suffix); ok {
			return s.kind, id
		}
	}
	return Register, rest
}
