package jobmeta

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestOwned(t *testing.T) {
	cases := map[string]struct {
		key   string
		owned bool
	}{
		"state":                {State, true},
		"queued-at":            {QueuedAt, true},
		"admitted-at":          {AdmittedAt, true},
		"requeued-at":          {RequeuedAt, true},
		"requeues":             {Requeues, true},
		"preempted-by":         {PreemptedBy, true},
		"epoch":                {Epoch, true},
		"seal":                 {Seal, true},
		"submitted-by":         {SubmittedBy, true},
		"upper-case state":     {"Allot.State", true},
		"shouting prefix":      {"ALLOT.QUEUED-AT", true},
		"unknown allot key":    {"allot.idle-exempt", true},
		"class case variant":   {"allot.Class", true},
		"bare prefix":          {"allot.", true},
		"class":                {Class, false},
		"gang":                 {Gang, false},
		"max-runtime":          {MaxRuntime, false},
		"user key":             {"team", false},
		"prefix without dot":   {"allotment", false},
		"short":                {"all", false},
		"namespace quota keys": {"allotquota", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			must.Eq(t, tc.owned, Owned(tc.key))
		})
	}
}

// TestAudit8_StripOwnedDropsForgedQueueMeta: forged queue meta from a
// caller is dropped before anything reads it (audit #8, #4).
func TestAudit8_StripOwnedDropsForgedQueueMeta(t *testing.T) {
	in := map[string]string{
		QueuedAt: "2000-01-01T00:00:00Z", PreemptedBy: "ml/blocker", RequeuedAt: "2026-11-30T12:00:00Z",
		State: StateAdmitted, "Allot.State": StateAdmitted, Seal: "v1.1.AAAA",
		Class: "high", Gang: "false", "team": "vision",
	}
	out := StripOwned(in)
	must.Eq(t, map[string]string{Class: "high", Gang: "false", "team": "vision"}, out)
	must.False(t, HasOwned(out))
	must.True(t, HasOwned(in))
	must.MapLen(t, 9, in) // the input is not changed
	must.Nil(t, StripOwned(map[string]string{State: "queued"}))
}
