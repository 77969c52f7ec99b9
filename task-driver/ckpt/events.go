package ckpt

import (
	"fmt"
	"strconv"
	"time"

	"github.com/allot-sh/allot/contract/ckptevent"
)

// Event messages, annotation keys and triggers come from ckptevent, the
// contract with the event readers (the governor).
const (
	// MsgRequested is the message of the event sent when the checkpoint
	// signal goes out.
	MsgRequested = ckptevent.Requested
	// AnnPath is the checkpoint path named by LATEST.
	AnnPath = ckptevent.Path
	// AnnStep is the step named by LATEST (absent when it names none).
	AnnStep = ckptevent.Step
	// AnnUnixTime is when LATEST was written, in Unix seconds.
	AnnUnixTime = ckptevent.UnixTime
	// AnnDuration is the event's duration in milliseconds.
	AnnDuration = ckptevent.Duration
	// AnnTrigger says why a checkpoint was saved.
	AnnTrigger = ckptevent.Trigger
	// AnnSignal is the checkpoint signal sent.
	AnnSignal = ckptevent.Signal

	triggerRequested = ckptevent.TriggerRequested
	triggerPeriodic  = ckptevent.TriggerPeriodic
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
	msg := fmt.Sprintf("%s%s (%s)", ckptevent.Saved, l.Path, round(d))
	if l.HasStep() {
		ann[AnnStep] = strconv.FormatInt(l.Step, 10)
		msg = fmt.Sprintf("%s%s step %d (%s)", ckptevent.Saved, l.Path, l.Step, round(d))
	}
	return event{msg: msg, ann: ann}
}

func timedOutEvent(d time.Duration) event {
	return event{
		msg: ckptevent.TimedOut + round(d).String(),
		ann: map[string]string{AnnDuration: ms(d), AnnTrigger: triggerRequested},
	}
}

func exitedWithoutCheckpointEvent(d time.Duration) event {
	return event{
		msg: fmt.Sprintf("%stask exited after %s without replacing LATEST", ckptevent.NotSaved, round(d)),
		ann: map[string]string{AnnDuration: ms(d), AnnTrigger: triggerRequested},
	}
}

func warningEvent(format string, args ...any) event {
	return event{msg: ckptevent.Warning + fmt.Sprintf(format, args...)}
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func round(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

func resumeEvent(l Latest) event {
	ann := map[string]string{AnnPath: l.Path, AnnUnixTime: strconv.FormatInt(l.ModTime.Unix(), 10), AnnTrigger: ckptevent.TriggerResume}
	msg := ckptevent.Resume + l.Path
	if l.HasStep() {
		ann[AnnStep] = strconv.FormatInt(l.Step, 10)
		msg = fmt.Sprintf("%s%s step %d", ckptevent.Resume, l.Path, l.Step)
	}
	return event{msg: msg, ann: ann}
}
