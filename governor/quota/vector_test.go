package quota

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestAppendKeysSortsAfterWhatDstHolds(t *testing.T) {
	cases := []struct {
		name string
		v    Vector
		dst  []string
		want []string
	}{
		{name: "empty", v: Vector{}, want: []string{}},
		{name: "one", v: Vector{GPU: 1}, want: []string{GPU}},
		{name: "sorted by name", v: Vector{Memory: 1, "nvidia/gpu/H200": 2, CPU: 3, GPU: 4},
			want: []string{CPU, GPU, Memory, "nvidia/gpu/H200"}},
		{name: "dst kept in front, unsorted with the rest", v: Vector{CPU: 1, GPU: 2},
			dst: []string{"zz"}, want: []string{"zz", CPU, GPU}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf [8]string
			dst := append(buf[:0], tc.dst...)
			must.Eq(t, tc.want, tc.v.AppendKeys(dst))
			must.Eq(t, tc.want[len(tc.dst):], tc.v.Keys())
		})
	}
}

func TestAppendKeysAllocatesNothingWithRoom(t *testing.T) {
	v := Vector{CPU: 1, Memory: 2, GPU: 3}
	var buf [8]string
	allocs := testing.AllocsPerRun(100, func() { _ = v.AppendKeys(buf[:0]) })
	must.Eq(t, 0.0, allocs)
}
