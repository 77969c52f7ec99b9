package cluster

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
)

// maxMetaReport bounds MaxRuntimeErr whatever the value: the quoted
// value (jobmeta.MaxQuoted) and the fixed words around it.
const maxMetaReport = jobmeta.MaxQuoted + 80

// TestHostileJobMeta: the user-set keys the store reads (allot.class,
// allot.gang, allot.max-runtime) come from whoever submits a job. A
// hostile allot.max-runtime is refused with a report that quotes it
// bounded; a value over MaxRuntimeLimit is refused; an over-long class
// reaches the engine cut.
func TestHostileJobMeta(t *testing.T) {
	huge := strings.Repeat("9", 64<<10)
	cases := map[string]struct {
		runtime string
		want    time.Duration
		wantErr string // substring; "" = accepted
		class   string
		wantCls string
	}{
		"one hour":             {runtime: "1h", want: time.Hour},
		"at the limit":         {runtime: "8760h", want: MaxRuntimeLimit},
		"one over the limit":   {runtime: "8760h1s", wantErr: `"8760h1s" is not a positive duration of at most 8760h`},
		"overflow":             {runtime: "9999999999999h", wantErr: `"9999999999999h" is not a positive duration`},
		"largest duration":     {runtime: "2562047h", wantErr: `"2562047h" is not a positive duration of at most 8760h`},
		"negative":             {runtime: "-1h", wantErr: `"-1h" is not a positive duration`},
		"NaN":                  {runtime: "NaN", wantErr: `"NaN" is not a positive duration`},
		"Inf hours":            {runtime: "+Infh", wantErr: `"+Infh" is not a positive duration`},
		"below a nanosecond":   {runtime: "0.1ns", wantErr: `"0.1ns" is not a positive duration`},
		"unicode digits":       {runtime: "٣h", wantErr: `"٣h" is not a positive duration`},
		"fullwidth digits":     {runtime: "１h", wantErr: `"１h" is not a positive duration`},
		"NUL":                  {runtime: "1h\x00", wantErr: `"1h\x00" is not a positive duration`},
		"64 KiB of digits":     {runtime: huge, wantErr: `…" (65536 bytes) is not a positive duration`},
		"64 KiB of non-UTF-8":  {runtime: strings.Repeat("\xff", 64<<10), wantErr: `…" (65536 bytes) is not`},
		"64 KiB, 4-byte runes": {runtime: strings.Repeat("\U0010ffff", 16<<10), wantErr: `…" (65536 bytes) is not`},
		"class at the bound":   {class: strings.Repeat("c", jobmeta.MaxShown), wantCls: strings.Repeat("c", jobmeta.MaxShown)},
		"class of 64 KiB":      {class: huge, wantCls: strings.Repeat("9", jobmeta.MaxShown) + "…"},
		"known class":          {class: "high", wantCls: "high"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			meta := map[string]string{}
			if tc.runtime != "" {
				meta[jobmeta.MaxRuntime] = tc.runtime
			}
			if tc.class != "" {
				meta[jobmeta.Class] = tc.class
			}
			out := ConvertJob(&api.Job{ID: ptrTo("j"), Meta: meta})
			must.Eq(t, tc.want, out.MaxRuntime)
			must.Eq(t, tc.wantCls, out.Class)
			if tc.wantErr == "" {
				must.Eq(t, "", out.MaxRuntimeErr)
				return
			}
			must.StrContains(t, out.MaxRuntimeErr, tc.wantErr)
			must.LessEq(t, maxMetaReport, len(out.MaxRuntimeErr))
		})
	}
}

// FuzzJobMeta: whatever a submitter puts in allot.max-runtime,
// allot.class and allot.gang, converting the job never panics, the
// max-runtime report is bounded and quotes the value, an accepted
// max-runtime is positive and at most MaxRuntimeLimit (and never comes
// with a report), and the class the engine reads is bounded and is the
// value itself when short enough.
func FuzzJobMeta(f *testing.F) {
	for _, s := range []string{"", "1h", "90m", " 4h ", "-1h", "0s", "3600", "9999999999999h", "2562047h", "8760h",
		"8760h0m1s", "NaN", "+Infh", "1e3h", "٣h", "１h", "0.1ns", "1h\x00", strings.Repeat("9", 64<<10), "\xff\xfe"} {
		f.Add(s, "standard", "false")
	}
	f.Add("1h", strings.Repeat("é", 100), "FALSE")
	f.Add("", "", " true ")
	f.Fuzz(func(t *testing.T, runtime, class, gang string) {
		j := &api.Job{ID: ptrTo("j"), Meta: map[string]string{
			jobmeta.MaxRuntime: runtime, jobmeta.Class: class, jobmeta.Gang: gang}}
		out := ConvertJob(j)
		must.LessEq(t, maxMetaReport, len(out.MaxRuntimeErr))
		if out.MaxRuntimeErr != "" {
			must.Eq(t, time.Duration(0), out.MaxRuntime)
			must.StrContains(t, out.MaxRuntimeErr, jobmeta.Quote(strings.TrimSpace(runtime)))
		} else if out.MaxRuntime != 0 {
			must.Positive(t, out.MaxRuntime)
			must.LessEq(t, MaxRuntimeLimit, out.MaxRuntime)
		} else {
			must.Eq(t, "", strings.TrimSpace(runtime))
		}
		must.LessEq(t, jobmeta.MaxShown+1, utf8.RuneCountInString(out.Class))
		if utf8.RuneCountInString(class) <= jobmeta.MaxShown {
			must.Eq(t, class, out.Class)
		}
		must.Eq(t, strings.EqualFold(strings.TrimSpace(gang), "false"), out.NoGang)
	})
}
