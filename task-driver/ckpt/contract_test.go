package ckpt

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/cluster"
)

// Contract test: the checkpoint events this driver writes, as Nomad 1.6.1's
// client turns them into task events (allocRunner.GetTaskEventHandler: type
// "Driver", DriverMessage, the annotations as Details; DisplayMessage is the
// DriverMessage), are what the governor reads as the allocation's last
// checkpoint. Only test code imports both sides.
func TestGovernorReadsDriverCheckpointEvents(t *testing.T) {
	written := time.Unix(1_700_000_123, 0)
	later := written.Add(time.Minute)
	cases := map[string]struct {
		events []event
		want   time.Time // zero: no checkpoint
	}{
		"requested save": {events: []event{requestedEvent("SIGUSR1", time.Minute),
			savedEvent(Latest{Path: "/ck/s-9", Step: 9, ModTime: written}, time.Second, triggerRequested)}, want: written},
		"newest periodic save without step": {events: []event{
			savedEvent(Latest{Path: "/ck/b", Step: -1, ModTime: later}, time.Minute, triggerPeriodic),
			savedEvent(Latest{Path: "/ck/a", Step: -1, ModTime: written}, time.Minute, triggerPeriodic)}, want: later},
		"resume only": {events: []event{resumeEvent(Latest{Path: "/ck/s-9", Step: 9, ModTime: written})}},
		"timed out":   {events: []event{requestedEvent("SIGUSR1", time.Minute), timedOutEvent(time.Minute)}},
		"not saved":   {events: []event{exitedWithoutCheckpointEvent(time.Second), warningEvent("x")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := cluster.LastSaved(allocWith(tc.events, written.Add(time.Hour)))
			must.Eq(t, !tc.want.IsZero(), ok)
			must.Eq(t, tc.want.Unix(), got.Unix())
		})
	}
}

// allocWith converts events the way Nomad's client does, logged at logged.
func allocWith(events []event, logged time.Time) *api.Allocation {
	ts := &api.TaskState{}
	for _, ev := range events {
		ts.Events = append(ts.Events, &api.TaskEvent{Type: "Driver", Time: logged.UnixNano(),
			DriverMessage: ev.msg, DisplayMessage: ev.msg, Details: ev.ann})
	}
	return &api.Allocation{ID: "a1", TaskStates: map[string]*api.TaskState{"train": ts}}
}
