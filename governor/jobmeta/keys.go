// Package jobmeta is the one home of the job-meta contract
// (ARCHITECTURE.md, "Job contract"): the key names, which of them the
// governor owns, the reader of the governor's record in a stored job, the
// writers Admit (AdmitPinned), Unpin, Hold, Requeue and Forget, and the
// admission seal that makes the record unforgeable.
package jobmeta

import "strings"

// User-set job meta keys: the governor reads them, users write them.
const (
	// Class is the job's priority class; empty means the tenant's default.
	Class = "allot.class"
	// Gang is "false" when the job's allocations need not run together.
	Gang = "allot.gang"
	// MaxRuntime is an optional hint of the job's longest run.
	MaxRuntime = "allot.max-runtime"
)

// Governor-owned job meta keys: only the governor writes them. A user's
// values are dropped on every route (StripOwned), and a stored job's
// values count only when the seal verifies (Sealer.Verify).
const (
	// State is "queued" (held: Stop is true) or "admitted".
	State = "allot.state"
	// QueuedAt is when the job entered the queue (RFC 3339); its place.
	QueuedAt = "allot.queued-at"
	// AdmittedAt is when the governor admitted the job; the gang timeout
	// counts from it.
	AdmittedAt = "allot.admitted-at"
	// RequeuedAt is when the governor last requeued the job; its back-off
	// counts from it.
	RequeuedAt = "allot.requeued-at"
	// Requeues counts how often the governor stopped the job after
	// admitting it (preemption, gang timeout).
	Requeues = "allot.requeues"
	// PreemptedBy lists the jobs whose preemption requeued this one, as
	// opaque references (Sealer.Ref of their "ns/id"), space-separated,
	// most recent last.
	PreemptedBy = "allot.preempted-by"
	// Epoch is the leader term of the governor that wrote the record.
	Epoch = "allot.epoch"
	// SubmittedBy is the accessor ID of the token that submitted the job
	// through the governor (the governor's own writes carry it forward).
	SubmittedBy = "allot.submitted-by"
	// PinKey (pin.go), allot.pin, records the placement pin the governor
	// wrote into the job's groups.

	// Seal is the admission seal: a MAC over the job's identity, its
	// admission shape and the record above (seal.go).
	Seal = "allot.seal"
)

// Values of State.
const (
	StateQueued   = "queued"
	StateAdmitted = "admitted"
)

// Prefix starts every key of the job contract.
const Prefix = "allot."

// userKeys are the only allot.* keys a user may set, spelled exactly.
var userKeys = map[string]bool{Class: true, Gang: true, MaxRuntime: true}

// UserKey reports whether key is one of the user-set keys, spelled
// exactly (Nomad meta keys are case-sensitive).
func UserKey(key string) bool { return userKeys[key] }

// Owned reports whether key belongs to the governor: every key that
// starts with "allot." in any letter case, except the user-set keys
// spelled exactly. Case variants ("Allot.State", "allot.CLASS") are owned
// too: the governor never reads them, and refusing them leaves no key a
// person could mistake for the governor's.
func Owned(key string) bool {
	if len(key) < len(Prefix) || !strings.EqualFold(key[:len(Prefix)], Prefix) {
		return false
	}
	return !userKeys[key]
}

// StripOwned returns a copy of meta without the governor-owned keys (nil
// when nothing is left). Use it on every job a user sends.
func StripOwned(meta map[string]string) map[string]string {
	var out map[string]string
	for k, v := range meta {
		if Owned(k) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(meta))
		}
		out[k] = v
	}
	return out
}

// HasOwned reports whether meta holds any governor-owned key.
func HasOwned(meta map[string]string) bool {
	for k := range meta {
		if Owned(k) {
			return true
		}
	}
	return false
}
