package quota

import (
	"fmt"
	"strconv"
	"strings"
)

// Well-known resource names. Any other resource is a device id
// "vendor/type/model" such as "nvidia/gpu/H200".
const (
	// CPU is measured in MHz.
	CPU = "cpu"
	// Memory is measured in MiB.
	Memory = "memory"
	// GPU counts every device of type gpu, whatever its vendor and model.
	GPU = "gpu"
	// NPU counts every device of type npu, whatever its vendor and model.
	NPU = "npu"
)

// Vector is an amount of each named resource. A missing key is zero.
type Vector map[string]int64

// Clone returns an independent copy of v.
func (v Vector) Clone() Vector {
	out := make(Vector, len(v))
	for k, n := range v {
		out[k] = n
	}
	return out
}

// Add adds o to v in place.
func (v Vector) Add(o Vector) {
	for k, n := range o {
		v[k] += n
	}
}

// Sub subtracts o from v in place.
func (v Vector) Sub(o Vector) {
	for k, n := range o {
		v[k] -= n
	}
}

// Keys returns the resource names of v in a stable order.
func (v Vector) Keys() []string {
	return v.AppendKeys(make([]string, 0, len(v)))
}

// AppendKeys appends the resource names of v to dst in the order Keys
// gives. Given room in dst it allocates nothing: hot paths pass a small
// array's slice (a vector holds a handful of resources, so an insertion
// sort is the cheap one).
func (v Vector) AppendKeys(dst []string) []string {
	start := len(dst)
	for k := range v {
		dst = append(dst, k)
		for i := len(dst) - 1; i > start && dst[i] < dst[i-1]; i-- {
			dst[i], dst[i-1] = dst[i-1], dst[i]
		}
	}
	return dst
}

// String renders v as "cpu=500 memory=1024 nvidia/gpu/H200=2", skipping
// zero amounts.
func (v Vector) String() string {
	var parts []string
	for _, k := range v.Keys() {
		if v[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, v[k]))
		}
	}
	return strings.Join(parts, " ")
}

// ValidResource reports whether name is a resource a quota key may name:
// cpu, memory, gpu, npu or a device id vendor/type/model.
func ValidResource(name string) bool {
	switch name {
	case CPU, Memory, GPU, NPU:
		return true
	}
	parts := strings.Split(name, "/")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, " \t,=") {
			return false
		}
	}
	return true
}

// Unit renders the unit of a resource for people: "MHz", "MiB" or "".
func Unit(name string) string {
	switch name {
	case CPU:
		return "MHz"
	case Memory:
		return "MiB"
	}
	return ""
}

// Format renders an amount of a resource with its unit ("8", "4096 MiB").
func Format(name string, n int64) string {
	if u := Unit(name); u != "" {
		return strconv.FormatInt(n, 10) + " " + u
	}
	return strconv.FormatInt(n, 10)
}
