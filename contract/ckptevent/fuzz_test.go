package ckptevent

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// FuzzParse feeds arbitrary task events (message, checkpoint annotations,
// and whether the step annotation is present) to Parse. Seeds:
// testdata/fuzz/FuzzParse. Properties: it never panics; a reported
// checkpoint comes only from a Saved or Resume event, has a path, a step
// of -1 exactly when the annotation is absent and otherwise the
// annotation's non-negative value, and the annotation's time; and an event
// written the way the driver writes it (decimal step and Unix seconds)
// always parses back to what was written.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, message, path, step, unix, trigger string, hasStep bool) {
		details := map[string]string{Path: path, UnixTime: unix, Trigger: trigger}
		if hasStep {
			details[Step] = step
		}
		cp, ok := Parse(message, details)
		if !ok {
			must.Eq(t, Checkpoint{}, cp)
		} else {
			must.True(t, strings.HasPrefix(message, Saved) || strings.HasPrefix(message, Resume))
			must.Eq(t, path, cp.Path)
			must.NotEq(t, "", cp.Path)
			must.Eq(t, trigger, cp.Trigger)
			sec, err := strconv.ParseInt(unix, 10, 64)
			must.NoError(t, err)
			must.Eq(t, time.Unix(sec, 0), cp.Written)
			if hasStep {
				must.NonNegative(t, cp.Step)
				n, err := strconv.ParseInt(step, 10, 64)
				must.NoError(t, err)
				must.Eq(t, n, cp.Step)
			} else {
				must.Eq(t, int64(-1), cp.Step)
			}
		}
		roundTrip(t, path, len(step), len(unix), trigger, hasStep)
	})
}

// roundTrip writes a checkpoint the way the driver does and parses it.
func roundTrip(t *testing.T, path string, step, sec int, trigger string, hasStep bool) {
	t.Helper()
	if path == "" {
		return
	}
	written := time.Unix(int64(sec)*7919-1e6, 0) // negative and positive times
	details := map[string]string{Path: path, UnixTime: strconv.FormatInt(written.Unix(), 10), Trigger: trigger}
	msg := Saved + path
	want := Checkpoint{Path: path, Step: -1, Written: written, Trigger: trigger}
	if hasStep {
		details[Step] = strconv.Itoa(step)
		msg, want.Step = Resume+path+" step "+strconv.Itoa(step), int64(step)
	}
	got, ok := Parse(msg, details)
	must.True(t, ok)
	must.Eq(t, want, got)
}
