package ckpt

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/contract/ckptevent"
)

// The driver's events must parse with the contract package the governor uses.
func TestEventsParseWithCkptevent(t *testing.T) {
	written := time.Unix(1_700_000_123, 0)
	withStep := Latest{Path: "/ck/s-9", Step: 9, ModTime: written}
	noStep := Latest{Path: "/ck/s-x", Step: -1, ModTime: written}
	cases := map[string]struct {
		ev   event
		want ckptevent.Checkpoint
	}{
		"requested save": {ev: savedEvent(withStep, 1500*time.Millisecond, triggerRequested),
			want: ckptevent.Checkpoint{Path: "/ck/s-9", Step: 9, Written: written, Trigger: ckptevent.TriggerRequested}},
		"periodic save without step": {ev: savedEvent(noStep, time.Minute, triggerPeriodic),
			want: ckptevent.Checkpoint{Path: "/ck/s-x", Step: -1, Written: written, Trigger: ckptevent.TriggerPeriodic}},
		"resume": {ev: resumeEvent(withStep),
			want: ckptevent.Checkpoint{Path: "/ck/s-9", Step: 9, Written: written, Trigger: ckptevent.TriggerResume}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ckptevent.Parse(tc.ev.msg, tc.ev.ann)
			must.True(t, ok, must.Sprintf("message %q", tc.ev.msg))
			must.Eq(t, tc.want, got)
		})
	}
	_, ok := ckptevent.Parse(timedOutEvent(time.Second).msg, timedOutEvent(time.Second).ann)
	must.False(t, ok)
	must.Eq(t, "Checkpoint saved: /ck/s-9 step 9 (1.5s)", savedEvent(withStep, 1500*time.Millisecond, triggerRequested).msg)
	must.Eq(t, "Checkpoint timed out after 2s", timedOutEvent(2*time.Second).msg)
}
