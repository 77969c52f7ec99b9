package quota

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestParseFile(t *testing.T) {
	tests := map[string]struct {
		src  string
		want []Desired
		err  string
	}{
		"two tenants": {src: `
tenant "b" {
  cohort        = "research"
  weight        = 2.5
  quota         = { gpu = 8, "nvidia/gpu/H200" = 4, memory = "256GiB" }
  limit         = { gpu = 16 }
  lend          = { gpu = 4 }
  classes       = ["high", "standard"]
  default_class = "high"
}
tenant "a" {
  quota = { npu = 8 }
}`, want: []Desired{
			{Namespace: "a", Allot: map[string]string{"allot.quota.npu": "8"}},
			{Namespace: "b", Allot: map[string]string{"allot.cohort": "research", "allot.weight": "2.5",
				"allot.quota.gpu": "8", "allot.quota.nvidia/gpu/H200": "4", "allot.quota.memory": "256GiB",
				"allot.limit.gpu": "16", "allot.lend.gpu": "4", "allot.classes": "high,standard", "allot.default-class": "high"}},
		}},
		"syntax error":      {src: `tenant "a" { quota = { gpu = 8 }`, err: "parsing tenants.hcl"},
		"unknown attribute": {src: `tenant "a" { qouta = { gpu = 8 } }`, err: `Unsupported argument; An argument named "qouta"`},
		"no label":          {src: `tenant { quota = { gpu = 8 } }`, err: "decoding tenants.hcl"},
		"duplicate":         {src: "tenant \"a\" {}\ntenant \"a\" {}", err: `tenant "a" is declared twice`},
		"unknown resource":  {src: `tenant "a" { quota = { tpu = 8 } }`, err: `tenant "a": unknown resource "tpu"`},
		"negative":          {src: `tenant "a" { limit = { gpu = -1 } }`, err: "allot.limit.gpu: bad amount"},
		"empty file":        {src: ``, err: "no tenant blocks"},
		"wrong type":        {src: `tenant "a" { quota = "gpu=8" }`, err: "decoding tenants.hcl"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseFile("tenants.hcl", []byte(tc.src))
			if tc.err != "" {
				must.ErrorContains(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}
