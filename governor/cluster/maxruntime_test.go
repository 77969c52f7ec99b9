package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
)

// TestMaxRuntimeMeta: allot.max-runtime reaches the engine as a duration;
// a value that is not a positive duration is reported, not guessed.
func TestMaxRuntimeMeta(t *testing.T) {
	cases := map[string]struct {
		meta    string
		want    time.Duration
		wantErr string
	}{
		"unset":    {"", 0, ""},
		"hours":    {"4h", 4 * time.Hour, ""},
		"spaces":   {" 90m ", 90 * time.Minute, ""},
		"word":     {"soon", 0, `"soon" is not a positive duration`},
		"negative": {"-1h", 0, `"-1h" is not a positive duration`},
		"zero":     {"0s", 0, `"0s" is not a positive duration`},
		"no unit":  {"3600", 0, `"3600" is not a positive duration`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := &api.Job{ID: ptrTo("j"), Meta: map[string]string{}}
			if tc.meta != "" {
				j.Meta[jobmeta.MaxRuntime] = tc.meta
			}
			out := ConvertJob(j)
			must.Eq(t, tc.want, out.MaxRuntime)
			if tc.wantErr == "" {
				must.Eq(t, "", out.MaxRuntimeErr)
			} else {
				must.StrContains(t, out.MaxRuntimeErr, tc.wantErr)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
