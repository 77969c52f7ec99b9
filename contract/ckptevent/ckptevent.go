// Package ckptevent is the wire contract of the ckpt task driver's task
// events: message prefixes, annotation keys and a parser. The driver
// writes events with these names; the governor reads them (Nomad task
// events of type "Driver", annotations in TaskEvent.Details) to find how
// much work each allocation would lose. It has no dependencies, so readers
// do not pull in the driver.
package ckptevent

import (
	"strconv"
	"strings"
	"time"
)

// Driver is the driver's name in jobspecs (driver = "ckpt"): the governor
// reads it to know which tasks are asked to checkpoint before each stop
// and which can be sent its idle notices.
const Driver = "ckpt"

// Message prefixes of the driver's events.
const (
	// Requested: the checkpoint signal went out.
	Requested = "Checkpoint requested"
	// Saved: LATEST changed ("Checkpoint saved: <path> step <n> (<duration>)").
	Saved = "Checkpoint saved: "
	// TimedOut: the checkpoint wait ran out ("Checkpoint timed out after <duration>").
	TimedOut = "Checkpoint timed out after "
	// NotSaved: the task exited on the signal without replacing LATEST.
	NotSaved = "Checkpoint not saved: "
	// Resume: a task started from a checkpoint ("Checkpoint resume: <path> step <n>").
	Resume = "Checkpoint resume: "
	// Warning: a misconfiguration the driver worked around.
	Warning = "Checkpoint warning: "
)

// Annotation keys (TaskEvent.Details).
const (
	// Path is the checkpoint path named by LATEST.
	Path = "checkpoint_path"
	// Step is the step named by LATEST (absent when it names none).
	Step = "checkpoint_step"
	// UnixTime is when LATEST was written, in Unix seconds.
	UnixTime = "checkpoint_unix_time"
	// Duration is in milliseconds: from the request to the save or time-out,
	// or since the previously reported checkpoint for periodic saves.
	Duration = "duration_ms"
	// Trigger is TriggerRequested, TriggerPeriodic or TriggerResume.
	Trigger = "trigger"
	// Signal is the checkpoint signal sent.
	Signal = "signal"
)

// Values of the Trigger annotation.
const (
	// TriggerRequested: saved during a stop, after the checkpoint signal.
	TriggerRequested = "requested"
	// TriggerPeriodic: saved by the task on its own.
	TriggerPeriodic = "periodic"
	// TriggerResume: the checkpoint a task started from.
	TriggerResume = "resume"
)

// Checkpoint is a checkpoint reported by a Saved or Resume event.
type Checkpoint struct {
	// Path is the checkpoint path from LATEST.
	Path string
	// Step is -1 when LATEST named none.
	Step int64
	// Written is when LATEST was replaced.
	Written time.Time
	// Trigger says how it came about.
	Trigger string
}

// Parse returns the checkpoint a task event reports, if it is a Saved or
// Resume event with a valid path and time. message is the event's
// DisplayMessage (or DriverMessage), details its Details.
func Parse(message string, details map[string]string) (Checkpoint, bool) {
	if !strings.HasPrefix(message, Saved) && !strings.HasPrefix(message, Resume) {
		return Checkpoint{}, false
	}
	cp := Checkpoint{Path: details[Path], Step: -1, Trigger: details[Trigger]}
	sec, err := strconv.ParseInt(details[UnixTime], 10, 64)
	if cp.Path == "" || err != nil {
		return Checkpoint{}, false
	}
	cp.Written = time.Unix(sec, 0)
	if s, ok := details[Step]; ok {
		step, err := strconv.ParseInt(s, 10, 64)
		if err != nil || step < 0 {
			return Checkpoint{}, false
		}
		cp.Step = step
	}
	return cp, true
}
