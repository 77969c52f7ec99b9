package engine

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestPoolName: an empty node pool is "default"; any other name, however
// odd, is kept as it is (Nomad validates pool names, the engine does not).
func TestPoolName(t *testing.T) {
	cases := map[string]string{
		"":        "default",
		"default": "default",
		"gpu":     "gpu",
		"all":     "all",
		" ":       " ",
		"../x":    "../x",
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			must.Eq(t, want, PoolName(in))
			must.Eq(t, want, (&Job{NodePool: in}).Pool())
		})
	}
}
