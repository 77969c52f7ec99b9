package ckpt

import (
	"fmt"
	"strconv"
	"time"
)

// Event messages and annotation keys. The governor parses these; change
// them only together with docs/task-driver.md.
const (
	// MsgRequested is the message of the event sent when the checkpoint
	// signal goes out.
	MsgRequested = "Checkpoint requested"
	// AnnPath is the checkpoint path named by LATEST.
	AnnPath = "checkpoint_path"
	// AnnStep is the step named by LATEST (absent when it names none).
	AnnStep = "checkpoint_step"
	// AnnUnixTime is when LATEST was written, in Unix seconds.
	AnnUnixTime = "checkpoint_unix_time"
	// AnnDuration is the event's duration in milliseconds: from the request
	// to the save or time-out, or the interval since the previous save for
	// checkpoints the task wrote on its own.
	AnnDuration = "duration_ms"
	// AnnTrigger says why: "requested" (stop protocol) or "periodic" (the
	// task on its own).
	AnnTrigger = "trigger"
	// AnnSignal is the checkpoint signal sent.
	AnnSignal = "signal"
)

// Triggers of a saved checkpoint.
const (
	triggerRequested = "requested"
	triggerPeriodic  = "periodic"
)

// event is a task event before it is addressed to a task.
type event struct {
	msg string
	ann map[string]string
}

func requestedEvent(signal string, wait time.Duration) event {
	return event{msg: MsgRequested, ann: map[string]string{
		AnnSignal:   signal,
		AnnDuration: ms(wait),
	}}
}

func savedEvent(l Latest, d time.Duration, trigger string) event {
	ann := map[string]string{
		AnnPath:     l.Path,
		AnnUnixTime: strconv.FormatInt(l.ModTime.Unix(), 10),
		AnnDuration: ms(d),
		AnnTrigger:  trigger,
	}
	msg := fmt.Sprintf("Checkpoint saved: %s (%s)", l.Path, round(d))
	if l.HasStep() {
		ann[AnnStep] = strconv.FormatInt(l.Step, 10)
		msg = fmt.Sprintf("Checkpoint saved: %s step %d (%s)", l.Path, l.Step, round(d))
	}
	return event{msg: msg, ann: ann}
}

func timedOutEvent(d time.Duration) event {
	return event{
		msg: fmt.Sprintf("Checkpoint timed out after %s", round(d)),
		ann: map[string]string{AnnDuration: ms(d), AnnTrigger: triggerRequested},
	}
}

func exitedWithoutCheckpointEvent(d time.Duration) event {
	return event{
		msg: fmt.Sprintf("Checkpoint not saved: task exited after %s without replacing LATEST", round(d)),
		ann: map[string]string{AnnDuration: ms(d), AnnTrigger: triggerRequested},
	}
}

func warningEvent(format string, args ...any) event {
	return event{msg: "Checkpoint warning: " + fmt.Sprintf(format, args...)}
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func round(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

func resumeEvent(l Latest) event {
	ann := map[string]string{AnnPath: l.Path, AnnUnixTime: strconv.FormatInt(l.ModTime.Unix(), 10), AnnTrigger: "resume"}
	msg := fmt.Sprintf("Checkpoint resume: %s", l.Path)
	if l.HasStep() {
		ann[AnnStep] = strconv.FormatInt(l.Step, 10)
		msg = fmt.Sprintf("Checkpoint resume: %s step %d", l.Path, l.Step)
	}
	return event{msg: msg, ann: ann}
}
