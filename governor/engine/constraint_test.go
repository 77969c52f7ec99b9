package engine

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// constraintNode is the node the constraint table evaluates against.
func constraintNode() *Node {
	n := mkNode("node-1").Pool("gpu").DC("dc2").Meta("rack", "r7").Meta("zones", "a, b,c").Build()
	n.Name, n.Class = "gpu-1", "h200"
	n.Attributes["kernel.name"] = "linux"
	n.Attributes["cpu.numcores"] = "64"
	n.Attributes["driver.ckpt.version"] = "0.3.1"
	return n
}

// TestNodeConstraints evaluates every operand the engine models (and the
// ones it leaves to Nomad) on every kind of node target, in the manner of
// Nomad's scheduler/feasible_test.go: numbers compare as numbers, other
// values as strings, an unset target fails everything but is_not_set.
func TestNodeConstraints(t *testing.T) {
	cases := map[string]struct {
		l, op, r string
		want     bool
	}{
		"id =":                 {"${node.unique.id}", "=", "node-1", true},
		"name ==":              {"${node.unique.name}", "==", "gpu-1", true},
		"datacenter is":        {"${node.datacenter}", "is", "dc2", true},
		"class empty op":       {"${node.class}", "", "h200", true},
		"pool !=":              {"${node.pool}", "!=", "default", true},
		"pool not (equal)":     {"${node.pool}", "not", "gpu", false},
		"attr =":               {"${attr.kernel.name}", "=", "linux", true},
		"attr = other":         {"${attr.kernel.name}", "=", "windows", false},
		"meta =":               {"${meta.rack}", "=", "r7", true},
		"literal both sides":   {"a", "=", "a", true},
		"number <":             {"${attr.cpu.numcores}", "<", "128", true},
		"number < as number":   {"${attr.cpu.numcores}", "<", "7", false},
		"number <= equal":      {"${attr.cpu.numcores}", "<=", "64", true},
		"number >":             {"${attr.cpu.numcores}", ">", "63.5", true},
		"number >= fails":      {"${attr.cpu.numcores}", ">=", "65", false},
		"number vs text":       {"${attr.cpu.numcores}", ">", "many", false},
		"string <":             {"${attr.kernel.name}", "<", "mac", true},
		"string >=":            {"${attr.kernel.name}", ">=", "linux", true},
		"regexp":               {"${attr.kernel.name}", "regexp", "^li.u", true},
		"regexp no match":      {"${attr.kernel.name}", "regexp", "^win", false},
		"regexp invalid":       {"${attr.kernel.name}", "regexp", "(", false},
		"set_contains":         {"${meta.zones}", "set_contains", "a,c", true},
		"set_contains_all":     {"${meta.zones}", "set_contains_all", "a, d", false},
		"set_contains_any":     {"${meta.zones}", "set_contains_any", "d,b", true},
		"set_contains_any no":  {"${meta.zones}", "set_contains_any", "d,e", false},
		"is_set":               {"${meta.rack}", "is_set", "", true},
		"is_set unset":         {"${meta.missing}", "is_set", "", false},
		"is_not_set":           {"${meta.missing}", "is_not_set", "", true},
		"is_not_set set":       {"${attr.kernel.name}", "is_not_set", "", false},
		"unset attr =":         {"${attr.missing}", "=", "", false},
		"unset attr !=":        {"${attr.missing}", "!=", "x", true},
		"both unset !=":        {"${attr.missing}", "!=", "${meta.missing}", false},
		"unset attr not":       {"${attr.missing}", "not", "linux", true},
		"unknown target":       {"${node.foo}", "=", "x", false},
		"unset right side":     {"linux", "=", "${attr.missing}", false},
		"target on right":      {"dc2", "=", "${node.datacenter}", true},
		"distinct_hosts left":  {"", "distinct_hosts", "true", true},
		"semver left to Nomad": {"${attr.driver.ckpt.version}", "semver", ">= 9.0", true},
	}
	n := constraintNode()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := newMatcher().nodeOK(n, []Constraint{{LTarget: tc.l, Operand: tc.op, RTarget: tc.r}})
			must.Eq(t, tc.want, got)
		})
	}
}

// TestDeviceConstraints evaluates device targets; attributes compare
// typed, with their units (Nomad's psstructs.Attribute), so 80 GiB is
// more than 40960 MiB and a unit of another dimension never compares.
func TestDeviceConstraints(t *testing.T) {
	d := &DeviceGroup{Vendor: "nvidia", Type: "gpu", Model: "H200", Healthy: 8, Attributes: map[string]string{
		"memory": "143771 MiB", "compute_capability": "9.0", "topology": "nvswitch", "nvlink_links": "18", "power": "700 W"}}
	cases := map[string]struct {
		l, op, r string
		want     bool
	}{
		"model =":                 {"${device.model}", "=", "H200", true},
		"vendor !=":               {"${device.vendor}", "!=", "amd", true},
		"type is":                 {"${device.type}", "is", "gpu", true},
		"memory > GiB":            {"${device.attr.memory}", ">", "80 GiB", true},
		"memory < GiB":            {"${device.attr.memory}", "<", "80 GiB", false},
		"memory >= same MiB":      {"${device.attr.memory}", ">=", "143771 MiB", true},
		"memory = in KiB":         {"${device.attr.memory}", "=", "147221504 KiB", true},
		"memory != in KiB":        {"${device.attr.memory}", "!=", "147221504 KiB", false},
		"memory != other":         {"${device.attr.memory}", "!=", "80 GiB", true},
		"memory = watts":          {"${device.attr.memory}", "=", "143771 W", false},
		"missing attr !=":         {"${device.attr.mig}", "!=", "true", true},
		"memory <= MiB":           {"${device.attr.memory}", "<=", "143770 MiB", false},
		"memory vs watts":         {"${device.attr.memory}", ">", "1 W", false},
		"compute capability >=":   {"${device.attr.compute_capability}", ">=", "8.0", true},
		"compute capability <":    {"${device.attr.compute_capability}", "<", "8.0", false},
		"links > plain number":    {"${device.attr.nvlink_links}", ">", "12", true},
		"power <= kW":             {"${device.attr.power}", "<=", "1 kW", true},
		"topology regexp":         {"${device.attr.topology}", "regexp", "^nv", true},
		"topology set_contains":   {"${device.attr.topology}", "set_contains_any", "pcie,nvswitch", true},
		"missing attr is_not_set": {"${device.attr.mig}", "is_not_set", "", true},
		"missing attr =":          {"${device.attr.mig}", "=", "true", false},
		"missing attr >":          {"${device.attr.mig}", ">", "1", false},
		"unknown device target":   {"${device.foo}", "=", "x", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := newMatcher().deviceOK(d, []Constraint{{LTarget: tc.l, Operand: tc.op, RTarget: tc.r}})
			must.Eq(t, tc.want, got)
		})
	}
}

// TestConstraintsAllMustHold: a node or device passes only when every
// constraint holds; none passes trivially.
func TestConstraintsAllMustHold(t *testing.T) {
	m := newMatcher()
	n := constraintNode()
	must.True(t, m.nodeOK(n, nil))
	must.True(t, m.nodeOK(n, []Constraint{{"${node.pool}", "=", "gpu"}, {"${meta.rack}", "is_set", ""}}))
	must.False(t, m.nodeOK(n, []Constraint{{"${node.pool}", "=", "gpu"}, {"${meta.rack}", "=", "r8"}}))
	d := &DeviceGroup{Vendor: "nvidia", Type: "gpu", Model: "A100", Attributes: map[string]string{"memory": "40 GiB"}}
	must.False(t, m.deviceOK(d, []Constraint{{"${device.model}", "=", "A100"}, {"${device.attr.memory}", ">=", "80 GiB"}}))
}

// TestDeviceMatches: a jobspec device name selects a group by type, by
// vendor and type, or by vendor, type and model; any other shape (empty
// parts, a fourth part, another vendor or model) selects nothing.
func TestDeviceMatches(t *testing.T) {
	d := &DeviceGroup{Vendor: "nvidia", Type: "gpu", Model: "H200"}
	cases := map[string]bool{
		"gpu":                true,
		"nvidia/gpu":         true,
		"nvidia/gpu/H200":    true,
		"npu":                false,
		"amd/gpu":            false,
		"nvidia/gpu/A100":    false,
		"nvidia/gpu/H200/x":  false,
		"":                   false,
		"/gpu":               false,
		"nvidia/":            false,
		"nvidia//H200":       false,
		"gpu/nvidia":         false,
		"NVIDIA/GPU":         false,
		"nvidia/gpu/H200/":   false,
		"../../nvidia/gpu/x": false,
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			must.Eq(t, want, DeviceMatches(name, d))
		})
	}
}

// TestDeviceNamePartsAsSplit: DeviceMatches and deviceNameType read a
// name as splitting it at every "/" would: checked against that reading
// on every name of up to six pieces of "nvidia", "gpu", "H200", "/" and
// "".
func TestDeviceNamePartsAsSplit(t *testing.T) {
	d := &DeviceGroup{Vendor: "nvidia", Type: "gpu", Model: "H200"}
	matches := func(name string) bool {
		p := strings.Split(name, "/")
		switch len(p) {
		case 1:
			return p[0] == d.Type
		case 2:
			return p[0] == d.Vendor && p[1] == d.Type
		case 3:
			return p[0] == d.Vendor && p[1] == d.Type && p[2] == d.Model
		}
		return false
	}
	typeOf := func(name string) string {
		if p := strings.Split(name, "/"); len(p) == 2 || len(p) == 3 {
			return p[1]
		}
		return strings.Split(name, "/")[0]
	}
	pieces := []string{"nvidia", "gpu", "H200", "/", ""}
	names := []string{""}
	for n := 0; n < 6; n++ {
		var next []string
		for _, name := range names {
			for _, p := range pieces {
				next = append(next, name+p)
			}
		}
		names = append(names, next...)
	}
	for _, name := range names {
		must.Eq(t, matches(name), DeviceMatches(name, d), must.Sprintf("DeviceMatches(%q)", name))
		must.Eq(t, typeOf(name), deviceNameType(name), must.Sprintf("deviceNameType(%q)", name))
	}
}
