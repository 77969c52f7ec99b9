package sim

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestParseLoadSeeds(t *testing.T) {
	ok := []struct {
		in   string
		want []LoadSeed
	}{
		{"1.5:2", []LoadSeed{{1.5, 2}}},
		{"1.2:2, 2.0:-3", []LoadSeed{{1.2, 2}, {2.0, -3}}},
	}
	for _, tc := range ok {
		got, err := ParseLoadSeeds(tc.in)
		must.NoError(t, err, must.Sprint(tc.in))
		must.Eq(t, tc.want, got, must.Sprint(tc.in))
	}
	for _, in := range []string{"", "1.2", "1.2:2,", ":2", "x:2", "0:2", "-1:2", "NaN:2", "Inf:2", "1e400:2",
		"1.2:", "1.2:x", "1.2:2.5", "1.2:99999999999999999999", "1.2:2:3", "1.2;2"} {
		_, err := ParseLoadSeeds(in)
		must.Error(t, err, must.Sprintf("%q", in))
	}
}
