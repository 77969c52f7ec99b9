package ckptevent

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestIdleSignalRoundTrip(t *testing.T) {
	since := time.Date(2026, 11, 30, 15, 2, 11, 0, time.UTC)
	cases := map[string]struct {
		n   IdleNotice
		msg string
	}{
		"checkpoint": {n: IdleNotice{Kind: IdleWarning, Since: since, Due: since.Add(30 * time.Minute), Action: "checkpoint", Class: "idle-held"},
			msg: "Allot: accelerator idle since 2026-11-30T15:02:11Z (idle-held); checkpoint-stop at 2026-11-30T15:32:11Z unless busy"},
		"stop": {n: IdleNotice{Kind: IdleWarning, Since: since, Due: since.Add(time.Minute), Action: "stop"},
			msg: "Allot: accelerator idle since 2026-11-30T15:02:11Z; stop at 2026-11-30T15:03:11Z unless busy"},
		"warn only": {n: IdleNotice{Kind: IdleWarning, Since: since, Due: since, Action: "warn", Class: "idle"},
			msg: "Allot: accelerator idle since 2026-11-30T15:02:11Z (idle); warning only, it will not be stopped"},
		"unclaimed": {n: IdleNotice{Kind: IdleWarning, Since: since, Due: since.Add(time.Hour), Action: "checkpoint", Class: "unclaimed"},
			msg: "Allot: service unclaimed (no new submission) since 2026-11-30T15:02:11Z (unclaimed); checkpoint-stop at 2026-11-30T16:02:11Z unless resubmitted"},
		"withdrawn": {n: IdleNotice{Kind: IdleWithdrawn}, msg: "Allot: accelerator busy again; idle warning withdrawn"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sig := tc.n.Signal()
			must.True(t, IsIdleSignal(sig))
			got, err := ParseIdleSignal(sig)
			must.NoError(t, err)
			must.Eq(t, tc.n, got)
			must.Eq(t, tc.msg, got.Message())
		})
	}
}

func TestIdleSignalRefused(t *testing.T) {
	for name, sig := range map[string]string{
		"unknown kind": "ALLOT_IDLE_PANIC",
		"no due":       "ALLOT_IDLE_WARNING;since=2026-11-30T15:02:11Z;action=checkpoint",
		"bad time":     "ALLOT_IDLE_WARNING;since=soon;due=2026-11-30T15:02:11Z;action=checkpoint",
		"bare":         "ALLOT_IDLE_WARNING",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseIdleSignal(sig)
			must.ErrorIs(t, err, ErrIdleSignal)
		})
	}
	must.False(t, IsIdleSignal("SIGUSR1"))
}

// FuzzParseIdleSignal feeds arbitrary signal names (anyone with
// alloc-lifecycle can send one to the driver): never a panic; a name that
// parses has a known kind, and a warning its times and action; its task
// event message starts with IdleMessage, is bounded by the name, and never
// reads as a checkpoint (a tenant forging one into its own task cannot
// move the checkpoint age the governor weighs victims by); what Signal
// writes parses back to the same notice.
func FuzzParseIdleSignal(f *testing.F) {
	f.Add("ALLOT_IDLE_WARNING;since=2026-11-30T15:02:11Z;due=2026-11-30T15:32:11Z;action=checkpoint;class=idle-held")
	f.Add("ALLOT_IDLE_WITHDRAWN")
	f.Add("ALLOT_IDLE_WARNING;since=;due=;action=")
	f.Add("SIGUSR1")
	f.Add("ALLOT_IDLE_WARNING;since=2026-11-30T15:02:11Z;due=2026-11-30T15:32:11Z;action=x;class=Checkpoint saved: /ckpt step 9")
	f.Add("ALLOT_IDLE_WITHDRAWN;since=x;checkpoint_path=/ckpt")
	f.Fuzz(func(t *testing.T, name string) {
		n, err := ParseIdleSignal(name)
		if err != nil {
			must.Eq(t, IdleNotice{}, n)
			return
		}
		must.True(t, n.Kind == IdleWarning || n.Kind == IdleWithdrawn)
		if n.Kind == IdleWarning {
			must.False(t, n.Since.IsZero() || n.Due.IsZero() || n.Action == "")
		}
		msg := n.Message()
		must.StrHasPrefix(t, IdleMessage, msg)
		must.LessEq(t, len(name)+200, len(msg), must.Sprintf("message %q", msg))
		_, isCheckpoint := Parse(msg, map[string]string{Path: "/ckpt", UnixTime: "1764514931", Trigger: TriggerPeriodic})
		must.False(t, isCheckpoint)
		again, err := ParseIdleSignal(n.Signal())
		must.NoError(t, err)
		must.Eq(t, n.Signal(), again.Signal())
	})
}
