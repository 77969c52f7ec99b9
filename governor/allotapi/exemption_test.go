package allotapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
)

// TestExemptionExpiry: the expiry `allotctl idle exempt -until` and the
// console's exemption form accept and refuse.
func TestExemptionExpiry(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		in      string
		want    time.Time
		wantErr string
	}{
		"duration":            {in: "48h", want: now.Add(48 * time.Hour)},
		"one second":          {in: "1s", want: now.Add(time.Second)},
		"the maximum":         {in: "2160h", want: now.Add(allotapi.MaxExemption)},
		"rfc3339":             {in: "2026-12-01T00:00:00Z", want: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		"rfc3339 offset, utc": {in: "2026-12-01T08:00:00+08:00", want: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		"zero":                {in: "0s", wantErr: "the expiry must be in the future"},
		"negative":            {in: "-1h", wantErr: "the expiry must be in the future"},
		"past time":           {in: "2026-11-30T11:59:59Z", wantErr: "the expiry must be in the future"},
		"too far":             {in: "2160h1s", wantErr: "the expiry must be within 2160h0m0s"},
		"too far time":        {in: "2027-06-01T00:00:00Z", wantErr: "the expiry must be within 2160h0m0s"},
		"words":               {in: "tomorrow", wantErr: `"tomorrow" is neither a duration (48h) nor an RFC3339 time`},
		"days":                {in: "90d", wantErr: `"90d" is neither a duration (48h) nor an RFC3339 time`},
		"empty":               {in: "", wantErr: `"" is neither a duration (48h) nor an RFC3339 time`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := allotapi.ExemptionExpiry(tc.in, now)
			if tc.wantErr != "" {
				must.EqError(t, err, tc.wantErr)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
			must.Eq(t, time.UTC, got.Location())
		})
	}
	got, err := allotapi.ExemptionExpiry("1500ms", now.Add(250*time.Millisecond))
	must.NoError(t, err)
	must.Eq(t, now.Add(time.Second), got, must.Sprint("truncated to the second"))
}

// TestExemptionMetaValue: the reason is cleaned and the value is what
// governor/idle.ParseExemption reads.
func TestExemptionMetaValue(t *testing.T) {
	until := time.Date(2026, 12, 1, 8, 0, 0, 0, time.FixedZone("CST", 8*3600))
	e := allotapi.IdleExemption{Until: until, Reason: "debugging; interactive"}
	must.Eq(t, "until=2026-12-01T00:00:00Z;reason=debugging, interactive", e.MetaValue())
	must.Eq(t, "allot.idle.exempt.train", allotapi.ExemptKeyPrefix+"train")
}

// TestExemptionReason: the reason is cleaned, and empty or overlong
// reasons are refused with a clear error.
func TestExemptionReason(t *testing.T) {
	cases := map[string]struct {
		in, want, errText string
	}{
		"cleaned":          {in: "  a; b \n", want: "a, b"},
		"blank":            {in: " \t", errText: "must not be empty"},
		"empty":            {in: "", errText: "must not be empty"},
		"at the cap":       {in: strings.Repeat("é", allotapi.MaxExemptionReason), want: strings.Repeat("é", allotapi.MaxExemptionReason)},
		"one over the cap": {in: strings.Repeat("x", allotapi.MaxExemptionReason+1), errText: "501 characters, over 500"},
		"megabyte":         {in: strings.Repeat("a;", 1<<19), errText: "over 500"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := allotapi.ExemptionReason(tc.in)
			if tc.errText != "" {
				must.ErrorContains(t, err, tc.errText)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}
