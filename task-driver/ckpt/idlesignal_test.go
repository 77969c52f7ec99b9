package ckpt

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul-template/signals"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/drivers/shared/executor"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/contract/ckptevent"
)

// signalRecorder is an executor that only records signals; any other
// method would panic on the nil embedded interface.
type signalRecorder struct {
	executor.Executor
	got []os.Signal
}

func (s *signalRecorder) Signal(sig os.Signal) error {
	s.got = append(s.got, sig)
	return nil
}

// TestSignalTaskIdleNotice: Allot's idle pseudo-signals become task events
// and never reach the process; real signals still do; a malformed reserved
// name is refused and not forwarded either.
func TestSignalTaskIdleNotice(t *testing.T) {
	since := time.Date(2026, 11, 30, 15, 2, 11, 0, time.UTC)
	warning := ckptevent.IdleNotice{Kind: ckptevent.IdleWarning, Since: since, Due: since.Add(30 * time.Minute),
		Action: "checkpoint", Class: "idle-held"}
	cases := map[string]struct {
		signal  string
		event   string // the task event's message ("" for none)
		kind    string
		sent    int
		badSign bool
	}{
		"warning": {signal: warning.Signal(), kind: ckptevent.IdleWarning,
			event: "Allot: accelerator idle since 2026-11-30T15:02:11Z (idle-held); checkpoint-stop at 2026-11-30T15:32:11Z unless busy"},
		"withdrawn":         {signal: ckptevent.IdleWithdrawn, kind: ckptevent.IdleWithdrawn, event: "Allot: accelerator busy again; idle warning withdrawn"},
		"malformed notice":  {signal: "ALLOT_IDLE_WARNING;since=yesterday", badSign: true},
		"real signal":       {signal: "SIGUSR1", sent: 1},
		"unknown real name": {signal: "SIGNOPE", badSign: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			d := New(ctx, hclog.NewNullLogger())
			rec := &signalRecorder{}
			var events []event
			d.tasks.set("t1", &taskHandle{exec: rec, logger: hclog.NewNullLogger(), emit: func(e event) { events = append(events, e) }})

			err := d.SignalTask("t1", tc.signal)
			if tc.badSign {
				must.ErrorIs(t, err, ErrBadSignal)
			} else {
				must.NoError(t, err)
			}
			must.Len(t, tc.sent, rec.got, must.Sprint("signals that reached the process"))
			if tc.event == "" {
				must.Len(t, 0, events)
				return
			}
			must.Len(t, 1, events)
			must.Eq(t, tc.event, events[0].msg)
			must.Eq(t, tc.kind, events[0].ann[AnnIdleNotice])
		})
	}
}

// FuzzSignalTask sends arbitrary signal names to a task, as anyone with
// alloc-lifecycle on its namespace can through `nomad alloc signal -s`:
// never a panic; a name starting with ALLOT_IDLE_ (malformed or not) never
// reaches the process and becomes at most one "Allot: " task event; any
// other name reaches it exactly when it is a real signal, and is refused
// with ErrBadSignal otherwise.
func FuzzSignalTask(f *testing.F) {
	f.Add("ALLOT_IDLE_WARNING;since=2026-11-30T15:02:11Z;due=2026-11-30T15:32:11Z;action=checkpoint;class=idle-held")
	f.Add("ALLOT_IDLE_WITHDRAWN")
	f.Add("ALLOT_IDLE_")
	f.Add("ALLOT_IDLE_SIGKILL")
	f.Add("ALLOT_IDLE_WARNING;since=yesterday;SIGKILL")
	f.Add("allot_idle_warning")
	f.Add(" ALLOT_IDLE_WARNING")
	f.Add("SIGKILL")
	f.Add("SIGUSR1;ALLOT_IDLE_WARNING")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := New(ctx, hclog.NewNullLogger())
	f.Fuzz(func(t *testing.T, name string) {
		rec := &signalRecorder{}
		var events []event
		d.tasks.set("t1", &taskHandle{exec: rec, logger: hclog.NewNullLogger(), emit: func(e event) { events = append(events, e) }})
		err := d.SignalTask("t1", name)
		if strings.HasPrefix(name, ckptevent.IdlePrefix) {
			must.SliceEmpty(t, rec.got, must.Sprint("a reserved name reached the process"))
			must.LessEq(t, 1, len(events))
			if err != nil {
				must.ErrorIs(t, err, ErrBadSignal)
				must.SliceEmpty(t, events)
			}
			for _, e := range events {
				must.StrHasPrefix(t, ckptevent.IdleMessage, e.msg)
			}
			return
		}
		must.SliceEmpty(t, events)
		if _, real := signals.SignalLookup[name]; real {
			must.NoError(t, err)
			must.Len(t, 1, rec.got)
			return
		}
		must.ErrorIs(t, err, ErrBadSignal)
		must.SliceEmpty(t, rec.got)
	})
}
