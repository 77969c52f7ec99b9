package jobmeta

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// TestQuoteIsBounded: a meta value is quoted whole up to MaxShown
// characters; a longer one is cut at a character boundary, marked and
// measured, whatever its bytes.
func TestQuoteIsBounded(t *testing.T) {
	cases := map[string]struct {
		in, want string
	}{
		"empty":           {"", `""`},
		"short":           {"4h", `"4h"`},
		"at the bound":    {strings.Repeat("a", MaxShown), `"` + strings.Repeat("a", MaxShown) + `"`},
		"one over":        {strings.Repeat("a", MaxShown+1), `"` + strings.Repeat("a", MaxShown) + `…" (65 bytes)`},
		"64 KiB":          {strings.Repeat("9", 64<<10), `"` + strings.Repeat("9", MaxShown) + `…" (65536 bytes)`},
		"multi-byte cut":  {strings.Repeat("é", MaxShown+2), `"` + strings.Repeat("é", MaxShown) + `…" (132 bytes)`},
		"control escaped": {"1h\n\x00", `"1h\n\x00"`},
		"not UTF-8":       {strings.Repeat("\xff", MaxShown+1), `"` + strings.Repeat(`\xff`, MaxShown) + `…" (65 bytes)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Quote(tc.in)
			must.Eq(t, tc.want, got)
			must.LessEq(t, MaxQuoted, len(got))
		})
	}
}
