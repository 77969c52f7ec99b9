package quota

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// FuzzParseAmount feeds arbitrary amounts of every resource kind to
// ParseAmount. Seeds: testdata/fuzz/FuzzParseAmount. Properties: it never
// panics; an error wraps ErrBadAmount; an accepted amount is within
// 0..MaxAmount, parses the same written as a bare number of base units,
// and (cpu, memory) the same again as Format writes it.
func FuzzParseAmount(f *testing.F) {
	f.Fuzz(func(t *testing.T, res, s string) {
		n, err := ParseAmount(res, s)
		if err != nil {
			must.ErrorIs(t, err, ErrBadAmount)
			must.Zero(t, n)
			return
		}
		must.Between(t, 0, n, MaxAmount)
		bare, err := ParseAmount(res, strconv.FormatInt(n, 10))
		must.NoError(t, err)
		must.Eq(t, n, bare)
		if res == CPU || res == Memory {
			formatted, err := ParseAmount(res, Format(res, n))
			must.NoError(t, err, must.Sprintf("Format gave %q", Format(res, n)))
			must.Eq(t, n, formatted)
		}
	})
}

// FuzzParse feeds a namespace's meta (three arbitrary keys and values) to
// Parse. Seeds: testdata/fuzz/FuzzParse. Properties: it never panics; an
// error wraps ErrInvalid and names the namespace; an accepted tenant
// satisfies every rule Parse promises (weight in (0, 1e6], amounts in
// 0..MaxAmount, limit ≥ quota ≥ lend, known classes), and writing it back
// as meta parses to the same tenant.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		meta := map[string]string{k1: v1, k2: v2, k3: v3}
		tn, err := Parse("ns1", meta, knownClasses)
		if err != nil {
			must.ErrorIs(t, err, ErrInvalid)
			must.StrContains(t, err.Error(), "namespace ns1")
			return
		}
		checkTenant(t, tn)
		back, err := Parse("ns1", metaOf(tn), knownClasses)
		must.NoError(t, err, must.Sprintf("meta %v", metaOf(tn)))
		must.Eq(t, tn, back)
	})
}

func checkTenant(t *testing.T, tn Tenant) {
	t.Helper()
	must.True(t, tn.Weight > 0 && tn.Weight <= 1e6 && !math.IsNaN(tn.Weight), must.Sprintf("weight %v", tn.Weight))
	must.NotEq(t, "", tn.Cohort)
	must.True(t, knownClasses[tn.DefaultClass])
	for _, c := range tn.Classes {
		must.True(t, knownClasses[c], must.Sprintf("class %q", c))
	}
	for _, v := range []Vector{tn.Quota, tn.Limit, tn.Lend} {
		for res, n := range v {
			must.True(t, ValidResource(res), must.Sprintf("resource %q", res))
			must.Between(t, 0, n, MaxAmount)
		}
	}
	for res, l := range tn.Limit {
		if q, ok := tn.Quota[res]; ok {
			must.GreaterEq(t, q, l)
		}
	}
	for res, l := range tn.Lend {
		must.LessEq(t, tn.Quota[res], l)
	}
}

// metaOf writes a tenant as namespace meta, amounts as bare numbers.
func metaOf(tn Tenant) map[string]string {
	m := map[string]string{
		KeyCohort:       tn.Cohort,
		KeyWeight:       strconv.FormatFloat(tn.Weight, 'g', -1, 64),
		KeyDefaultClass: tn.DefaultClass,
	}
	if len(tn.Classes) > 0 {
		m[KeyClasses] = strings.Join(tn.Classes, ",")
	}
	for prefix, v := range map[string]Vector{PrefixQuota: tn.Quota, PrefixLimit: tn.Limit, PrefixLend: tn.Lend} {
		for res, n := range v {
			m[prefix+res] = strconv.FormatInt(n, 10)
		}
	}
	return m
}

// TestAmountsAreBounded checks the bound FuzzParseAmount relies on: no
// spelling of an amount gets past MaxAmount or wraps around, and amounts
// with a whole unit are exact.
func TestAmountsAreBounded(t *testing.T) {
	cases := map[string]struct {
		res, in string
		want    int64
		bad     bool
	}{
		"largest bare amount":        {res: GPU, in: "9007199254740992", want: MaxAmount},
		"one above":                  {res: GPU, in: "9007199254740993", bad: true},
		"int64 max":                  {res: Memory, in: "9223372036854775807", bad: true},
		"TiB times a lot":            {res: Memory, in: "9223372036854775807TiB", bad: true},
		"exact above float mantissa": {res: Memory, in: "8589934591GiB", want: 8589934591 * 1024},
		"largest in GHz":             {res: CPU, in: "9007199254740GHz", want: 9007199254740000},
		"infinity":                   {res: Memory, in: "InfGiB", bad: true},
		"not a number":               {res: CPU, in: "NaNGHz", bad: true},
		"huge float":                 {res: Memory, in: "1e300MiB", bad: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseAmount(tc.res, tc.in)
			if tc.bad {
				must.True(t, errors.Is(err, ErrBadAmount), must.Sprintf("got %d, %v", got, err))
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}
