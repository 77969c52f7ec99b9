package proxy

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
)

// TestDispatchMetaQuotesBounded: a dispatch's meta is the caller's; a
// refused key or class is quoted cut, not echoed whole.
func TestDispatchMetaQuotesBounded(t *testing.T) {
	huge := strings.Repeat("x", 64<<10)
	for name, meta := range map[string]map[string]string{
		"owned key": {jobmeta.Prefix + huge: "v"},
		"class":     {jobmeta.Class: huge},
	} {
		t.Run(name, func(t *testing.T) {
			err := dispatchMeta(meta, "standard")
			must.Error(t, err)
			must.Less(t, jobmeta.MaxQuoted+200, len(err.Error()))
			must.StrContains(t, err.Error(), "bytes)")
		})
	}
}
