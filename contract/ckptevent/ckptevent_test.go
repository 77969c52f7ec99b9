package ckptevent

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestParse(t *testing.T) {
	full := map[string]string{Path: "/ck/s-5", Step: "5", UnixTime: "1700000000", Trigger: TriggerPeriodic}
	without := func(k string) map[string]string {
		m := map[string]string{}
		for key, v := range full {
			if key != k {
				m[key] = v
			}
		}
		return m
	}
	with := func(k, v string) map[string]string {
		m := without(k)
		m[k] = v
		return m
	}
	cases := map[string]struct {
		msg     string
		details map[string]string
		want    Checkpoint
		ok      bool
	}{
		"saved":         {msg: "Checkpoint saved: /ck/s-5 step 5 (1s)", details: full, ok: true, want: Checkpoint{Path: "/ck/s-5", Step: 5, Written: time.Unix(1700000000, 0), Trigger: TriggerPeriodic}},
		"resume":        {msg: "Checkpoint resume: /ck/s-5 step 5", details: full, ok: true, want: Checkpoint{Path: "/ck/s-5", Step: 5, Written: time.Unix(1700000000, 0), Trigger: TriggerPeriodic}},
		"no step":       {msg: "Checkpoint saved: /ck/s-5 (1s)", details: without(Step), ok: true, want: Checkpoint{Path: "/ck/s-5", Step: -1, Written: time.Unix(1700000000, 0), Trigger: TriggerPeriodic}},
		"requested":     {msg: "Checkpoint requested", details: map[string]string{Signal: "SIGUSR1"}},
		"other message": {msg: "Task started by client", details: full},
		"no path":       {msg: "Checkpoint saved: x", details: without(Path)},
		"bad time":      {msg: "Checkpoint saved: x", details: with(UnixTime, "soon")},
		"bad step":      {msg: "Checkpoint saved: x", details: with(Step, "-3")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Parse(tc.msg, tc.details)
			must.Eq(t, tc.ok, ok)
			if tc.ok {
				must.Eq(t, tc.want, got)
			}
		})
	}
}
