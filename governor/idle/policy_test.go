package idle

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestParseTenant(t *testing.T) {
	def := DefaultPolicy()
	cases := map[string]struct {
		meta     map[string]string
		want     func(*Policy)
		exempt   map[string]Exemption
		problems int
		problem  string // in every problem, when set
	}{
		"defaults": {meta: map[string]string{"allot.quota.gpu": "4"}, exempt: map[string]Exemption{}},
		"all keys": {
			meta: map[string]string{KeyWindow: "30m", KeyThreshold: "10%", KeyMemory: "2048", KeyGrace: "5m", KeyNotice: "2m", KeyAction: "warn"},
			want: func(p *Policy) {
				p.Window, p.ThresholdPct, p.MemoryMiB, p.Grace, p.Notice, p.Action = 30*time.Minute, 10, 2048, 5*time.Minute, 2*time.Minute, ActionWarn
			},
			exempt: map[string]Exemption{},
		},
		"bad values keep defaults": {
			meta: map[string]string{KeyWindow: "-1m", KeyThreshold: "150", KeyMemory: "lots", KeyGrace: "soon", KeyAction: "kill", KeyExemptPrefix + "x": "reason=no expiry",
				KeyNotice: "0s"},
			exempt:   map[string]Exemption{},
			problems: 7,
		},
		"hostile notice values keep the default": {
			meta: map[string]string{KeyNotice: "-5m"}, exempt: map[string]Exemption{}, problems: 1,
		},
		"notice beyond the grace is accepted (warned at once)": {
			meta: map[string]string{KeyNotice: "2562047h", KeyGrace: "0s"}, exempt: map[string]Exemption{},
			want: func(p *Policy) { p.Notice, p.Grace = 2562047*time.Hour, 0 },
		},
		"unknown idle keys are refused, not ignored": {
			meta:   map[string]string{"allot.idle.notcie": "5m", "allot.idle.exempt": "until=2030-01-01T00:00:00Z;reason=x", "allot.idle.": "1"},
			exempt: map[string]Exemption{}, problems: 3, problem: "unknown idle policy key",
		},
		"exemption": {
			meta:   map[string]string{KeyExemptPrefix + "train": "until=2026-12-01T00:00:00Z; reason=demo for the board"},
			exempt: map[string]Exemption{"train": {Until: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Reason: "demo for the board"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ParseTenant("ml", tc.meta, def)
			want := def
			if tc.want != nil {
				tc.want(&want)
			}
			must.Eq(t, want, got.Policy)
			must.Eq(t, tc.exempt, got.Exempt)
			must.Len(t, tc.problems, got.Problems)
			for _, p := range got.Problems {
				must.StrContains(t, p, tc.problem)
			}
		})
	}
}

func TestExemptionRoundTrip(t *testing.T) {
	e := Exemption{Until: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Reason: "a;b"}
	got, err := ParseExemption(e.Format())
	must.NoError(t, err)
	must.Eq(t, "a,b", got.Reason)
	must.Eq(t, e.Until, got.Until)
}

func TestPolicyValidate(t *testing.T) {
	must.NoError(t, DefaultPolicy().Validate())
	must.Error(t, Policy{Action: "x", ThresholdPct: -1}.Validate())
}
