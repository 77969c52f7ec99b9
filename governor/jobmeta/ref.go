package jobmeta

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// refPrefix starts every opaque preemptor reference.
const refPrefix = "r1."

// Ref is the opaque reference allot.preempted-by records for the job
// "ns/id": a keyed hash, so a victim's meta does not name a preemptor of
// a namespace its tenant may not read, while the governor, which knows
// every job's key, can tell which job it is (IsRef, and the store's
// lookup). A nil sealer has no references ("").
func (s *Sealer) Ref(key string) string {
	if s == nil || len(s.key) == 0 {
		return ""
	}
	m := hmac.New(sha256.New, s.key)
	writeField(m, "allot-preemptor", key)
	return refPrefix + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// IsRef reports whether v is an opaque preemptor reference rather than a
// job key.
func IsRef(v string) bool { return strings.HasPrefix(v, refPrefix) }

// refs turns every entry that is a job key into its reference.
func (s *Sealer) refs(list []string) []string {
	out := make([]string, 0, len(list))
	for _, v := range list {
		if !IsRef(v) {
			v = s.Ref(v)
		}
		if v != "" {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
