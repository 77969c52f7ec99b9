package idle

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// FuzzParseTenant feeds tenant-written allot.idle.* meta (two keys, any
// values) over the default policy: never a panic, a refused value keeps
// the default, and what is accepted stays within the policy's bounds.
func FuzzParseTenant(f *testing.F) {
	f.Add(KeyWindow, "2h", KeyThreshold, "5%")
	f.Add(KeyGrace, "-1s", KeyAction, "checkpoint")
	f.Add(KeyMemory, "1024MiB", KeyTTL, "72h")
	f.Add(KeyExemptPrefix+"train", "until=2027-01-01T00:00:00Z;reason=demo", KeyAction, "nuke")
	f.Add(KeyThreshold, "NaN", KeyWindow, "0s")
	f.Add(KeyNotice, "0s", KeyGrace, "10m")
	f.Add(KeyNotice, "-5m", "allot.idle.notcie", "5m")
	f.Add(KeyNotice, "2562047h", KeyNotice+" ", "1s")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		def := DefaultPolicy()
		got := ParseTenant("ml", map[string]string{k1: v1, k2: v2}, def)
		for _, kv := range [][2]string{{k1, v1}, {k2, v2}} {
			if one := ParseTenant("ml", map[string]string{kv[0]: kv[1]}, def); len(one.Problems) > 0 {
				must.Eq(t, def, one.Policy, must.Sprintf("refused %q=%q changed the policy", kv[0], kv[1]))
				must.MapEmpty(t, one.Exempt)
			}
		}
		p := got.Policy
		must.Positive(t, p.Window)
		must.GreaterEq(t, 0, p.Grace)
		must.Positive(t, p.Notice)
		must.GreaterEq(t, 0, p.UnclaimedTTL)
		must.True(t, p.ThresholdPct >= 0 && p.ThresholdPct <= 100, must.Sprintf("threshold %v", p.ThresholdPct))
		must.GreaterEq(t, 0, p.MemoryMiB)
		_, err := parseAction(string(p.Action))
		must.NoError(t, err)
		for _, e := range got.Exempt {
			must.False(t, e.Until.Equal(time.Time{}), must.Sprint("an exemption has an expiry"))
		}
	})
}
