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
	}{
		"defaults": {meta: map[string]string{"allot.quota.gpu": "4"}, exempt: map[string]Exemption{}},
		"all keys": {
			meta: map[string]string{KeyWindow: "30m", KeyThreshold: "10%", KeyMemory: "2048", KeyGrace: "5m", KeyAction: "warn"},
			want: func(p *Policy) {
				p.Window, p.ThresholdPct, p.MemoryMiB, p.Grace, p.Action = 30*time.Minute, 10, 2048, 5*time.Minute, ActionWarn
			},
			exempt: map[string]Exemption{},
		},
		"bad values keep defaults": {
			meta:     map[string]string{KeyWindow: "-1m", KeyThreshold: "150", KeyMemory: "lots", KeyGrace: "soon", KeyAction: "kill", KeyExemptPrefix + "x": "reason=no expiry"},
			exempt:   map[string]Exemption{},
			problems: 6,
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
