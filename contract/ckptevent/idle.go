package ckptevent

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Idle notices: Nomad 1.6.1 has no API to add a task event from outside
// the client, but an allocation signal (PUT /v1/client/allocation/<id>/signal)
// reaches the task driver's SignalTask by name, unchecked. The governor
// sends these reserved pseudo-signal names to ckpt tasks; the driver never
// forwards them to the process and writes a task event instead, so
// `nomad alloc status` shows the warning.
const (
	// IdlePrefix starts every reserved pseudo-signal name.
	IdlePrefix = "ALLOT_IDLE_"
	// IdleWarning: the accelerator is idle, the action is due at Due.
	IdleWarning = IdlePrefix + "WARNING"
	// IdleWithdrawn: busy again, the warning is withdrawn.
	IdleWithdrawn = IdlePrefix + "WITHDRAWN"
	// IdleMessage starts the driver's task event message.
	IdleMessage = "Allot: "
)

// ErrIdleSignal is returned for a reserved name that does not parse.
var ErrIdleSignal = errors.New("malformed Allot idle pseudo-signal")

// IdleNotice is what an idle pseudo-signal carries.
type IdleNotice struct {
	// Kind is IdleWarning or IdleWithdrawn.
	Kind string
	// Since is when the accelerator was first seen idle.
	Since time.Time
	// Due is when the action is taken unless the task is busy again.
	Due time.Time
	// Action is "checkpoint", "stop" or "warn" (warning only).
	Action string
	// Class is the waste class (idle-held, idle, unclaimed).
	Class string
}

// IsIdleSignal reports whether a signal name is reserved for idle notices.
func IsIdleSignal(name string) bool { return strings.HasPrefix(name, IdlePrefix) }

// Signal encodes the notice as a pseudo-signal name:
// ALLOT_IDLE_WARNING;since=<RFC3339>;due=<RFC3339>;action=<a>;class=<c>.
func (n IdleNotice) Signal() string {
	if n.Kind != IdleWarning {
		return n.Kind
	}
	return fmt.Sprintf("%s;since=%s;due=%s;action=%s;class=%s", n.Kind,
		n.Since.UTC().Format(time.RFC3339), n.Due.UTC().Format(time.RFC3339), clean(n.Action), clean(n.Class))
}

// clean keeps a value from breaking the encoding.
func clean(s string) string { return strings.NewReplacer(";", ",", "=", ":").Replace(s) }

// ParseIdleSignal decodes a pseudo-signal name made by Signal.
func ParseIdleSignal(name string) (IdleNotice, error) {
	parts := strings.Split(name, ";")
	n := IdleNotice{Kind: parts[0]}
	switch n.Kind {
	case IdleWithdrawn:
		return n, nil
	case IdleWarning:
	default:
		return IdleNotice{}, fmt.Errorf("%w: %q", ErrIdleSignal, name)
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		var err error
		switch k {
		case "since":
			n.Since, err = time.Parse(time.RFC3339, v)
		case "due":
			n.Due, err = time.Parse(time.RFC3339, v)
		case "action":
			n.Action = v
		case "class":
			n.Class = v
		}
		if err != nil {
			return IdleNotice{}, fmt.Errorf("%w: %s: %v", ErrIdleSignal, k, err)
		}
	}
	if n.Since.IsZero() || n.Due.IsZero() || n.Action == "" {
		return IdleNotice{}, fmt.Errorf("%w: %q needs since, due and action", ErrIdleSignal, name)
	}
	return n, nil
}

// Message is the task event a person reads in `nomad alloc status`.
func (n IdleNotice) Message() string {
	if n.Kind == IdleWithdrawn {
		return IdleMessage + "accelerator busy again; idle warning withdrawn"
	}
	what, unless := "accelerator idle since ", "unless busy"
	if n.Class == "unclaimed" {
		what, unless = "service unclaimed (no new submission) since ", "unless resubmitted"
	}
	head := IdleMessage + what + n.Since.UTC().Format(time.RFC3339)
	if n.Class != "" {
		head += " (" + n.Class + ")"
	}
	due := n.Due.UTC().Format(time.RFC3339)
	switch n.Action {
	case "checkpoint":
		return fmt.Sprintf("%s; checkpoint-stop at %s %s", head, due, unless)
	case "stop":
		return fmt.Sprintf("%s; stop at %s %s", head, due, unless)
	}
	return head + "; warning only, it will not be stopped"
}
