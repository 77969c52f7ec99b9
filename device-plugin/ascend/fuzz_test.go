package ascend

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shoenig/test/must"
)

// errShape is the shape of every ParseInfo error: the line it is about, or
// the whole output when it holds no NPU table.
var errShape = regexp.MustCompile(`^(line [1-9][0-9]*: |unrecognised output \(no NPU table\): )`)

// FuzzParseInfo feeds arbitrary output to the npu-smi parser. Seeds:
// testdata/fuzz/FuzzParseInfo (the recorded 910B and 310P tables, the bad
// fixtures and the audit #25 input). Properties: it never panics; an error
// names its line and comes without chips; accepted output gives distinct
// non-negative device ids, finite numbers and non-negative memory, parses
// the same twice, and survives a round trip through the 310P layout.
func FuzzParseInfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, out []byte) {
		chips, err := ParseInfo(out)
		if err != nil {
			must.Nil(t, chips)
			must.RegexMatch(t, errShape, err.Error())
			return
		}
		checkChips(t, chips)
		again, err := ParseInfo(out)
		must.NoError(t, err)
		must.Eq(t, chips, again)
		if len(chips) == 0 {
			return
		}
		back, err := ParseInfo(render310P(chips))
		must.NoError(t, err, must.Sprintf("re-rendered:\n%s", render310P(chips)))
		must.Eq(t, chips, back)
	})
}

func checkChips(t *testing.T, chips []Chip) {
	t.Helper()
	devices := map[int]bool{}
	for _, c := range chips {
		must.False(t, devices[c.Device], must.Sprintf("device id %d twice", c.Device))
		devices[c.Device] = true
		must.NonNegative(t, c.Device)
		must.NonNegative(t, c.NPU)
		must.NonNegative(t, c.Chip)
		must.NotEq(t, "", c.Name)
		must.NotEq(t, "", c.Health)
		must.StrHasPrefix(t, "Ascend", ModelName(c.Name))
		must.False(t, strings.Contains(ModelName(c.Name), "/"), must.Sprintf("model %q splits a device ID", ModelName(c.Name)))
		for _, s := range []string{c.Name, c.Health, c.BusID} {
			must.True(t, utf8.ValidString(s), must.Sprintf("%q is not UTF-8: Nomad's plugin protocol cannot carry it", s))
		}
		for _, v := range []float64{c.PowerW, c.TemperatureC, c.AICorePct} {
			must.False(t, math.IsNaN(v) || math.IsInf(v, 0), must.Sprintf("%v is not finite", v))
		}
		must.NonNegative(t, c.MemUsedMiB)
		must.NonNegative(t, c.MemTotalMiB)
	}
}

// render310P writes chips back as npu-smi's 310P table: one NPU row per
// chip (the parser carries the NPU row over to its chip rows).
func render310P(chips []Chip) []byte {
	var b strings.Builder
	b.WriteString("| NPU Name | Health | Power(W) Temp(C) Hugepages-Usage(page) |\n")
	b.WriteString("| Chip Device | Bus-Id | AICore(%) Memory-Usage(MB) |\n")
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, c := range chips {
		fmt.Fprintf(&b, "| %d %s | %s | %s %s 0 / 0 |\n", c.NPU, c.Name, c.Health, num(c.PowerW), num(c.TemperatureC))
		fmt.Fprintf(&b, "| %d %d | %s | %s %d / %d |\n", c.Chip, c.Device, c.BusID, num(c.AICorePct), c.MemUsedMiB, c.MemTotalMiB)
	}
	return []byte(b.String())
}
