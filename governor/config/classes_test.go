package config

import (
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
)

// TestClassNamesNoJobCanName: a class whose name no job's allot.class and
// no tenant's allot.classes or allot.default-class could ever name is
// refused, with the name quoted bounded; names a job can send are kept.
func TestClassNamesNoJobCanName(t *testing.T) {
	long := strings.Repeat("x", jobmeta.MaxShown+1)
	huge := strings.Repeat("y", 64<<10)
	cases := map[string]struct {
		name string
		want []string // error parts; none = accepted
	}{
		"64 characters":           {name: strings.Repeat("x", jobmeta.MaxShown)},
		"64 multi-byte runes":     {name: strings.Repeat("é", jobmeta.MaxShown)},
		"inner space and unicode": {name: "gpu batch…"},
		"65 characters": {name: long,
			want: []string{jobmeta.Quote(long), "longer than 64 characters", "no job could name it"}},
		"65 multi-byte runes": {name: strings.Repeat("é", jobmeta.MaxShown+1),
			want: []string{"longer than 64 characters"}},
		"64 KiB, quoted bounded": {name: huge,
			want: []string{jobmeta.Quote(huge), "(65536 bytes)", "longer than 64 characters"}},
		"empty":            {name: "", want: []string{`class ""`, "empty name"}},
		"comma":            {name: "a,b", want: []string{`class "a,b"`, "comma"}},
		"leading space":    {name: " high", want: []string{`class " high"`, "white space"}},
		"trailing tab":     {name: "high\t", want: []string{`class "high\t"`, "white space"}},
		"trailing newline": {name: "high\n", want: []string{`class "high\n"`, "white space"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := "class " + hclQuote(tc.name) + " {\n  priority = 40\n}\n"
			c, err := Load([]string{"-config", writeFile(t, src)}, noEnv, io.Discard)
			if len(tc.want) == 0 {
				must.NoError(t, err)
				must.Eq(t, Class{Priority: 40, Preemptible: true}, c.Classes[tc.name])
				return
			}
			must.Error(t, err)
			for _, w := range tc.want {
				must.StrContains(t, err.Error(), w)
			}
			must.Less(t, 2*jobmeta.MaxQuoted+300, len(err.Error()), must.Sprint("the error repeats the name bounded"))
		})
	}
}

// TestClassNameNotUTF8: no config file can spell such a name (HCL and
// JSON refuse or replace the bytes), but Validate judges any Config.
func TestClassNameNotUTF8(t *testing.T) {
	c := Default()
	c.Classes["hi\xffgh"] = Class{Priority: 40}
	err := c.Validate()
	must.Error(t, err)
	must.StrContains(t, err.Error(), `class "hi\xffgh": the name is not UTF-8`)
}

// hclQuote spells s as an HCL quoted string: for the printable names
// and \t, \n above, HCL's escapes are Go's (no name here holds "${").
func hclQuote(s string) string { return strconv.Quote(s) }
