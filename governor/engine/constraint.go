package engine

import (
	"regexp"
	"strconv"
	"strings"

	psstructs "github.com/hashicorp/nomad/plugins/shared/structs"
)

// matcher evaluates constraints; it caches compiled regular expressions
// for one cycle.
type matcher struct {
	regexps map[string]*regexp.Regexp
}

func newMatcher() *matcher { return &matcher{regexps: map[string]*regexp.Regexp{}} }

// nodeValue resolves a node constraint target such as ${attr.kernel.name}.
func nodeValue(n *Node, target string) (string, bool) {
	if !strings.HasPrefix(target, "${") || !strings.HasSuffix(target, "}") {
		return target, true
	}
	key := target[2 : len(target)-1]
	switch key {
	case "node.unique.id":
		return n.ID, true
	case "node.unique.name":
		return n.Name, true
	case "node.datacenter":
		return n.Datacenter, true
	case "node.class":
		return n.Class, true
	case "node.pool":
		return n.Pool, true
	}
	if a, ok := strings.CutPrefix(key, "attr."); ok {
		v, ok := n.Attributes[a]
		return v, ok
	}
	if m, ok := strings.CutPrefix(key, "meta."); ok {
		v, ok := n.Meta[m]
		return v, ok
	}
	return "", false
}

// deviceValue resolves a device constraint target such as
// ${device.attr.memory} or ${device.model}.
func deviceValue(d *DeviceGroup, target string) (string, bool) {
	if !strings.HasPrefix(target, "${") || !strings.HasSuffix(target, "}") {
		return target, true
	}
	key := target[2 : len(target)-1]
	switch key {
	case "device.model":
		return d.Model, true
	case "device.vendor":
		return d.Vendor, true
	case "device.type":
		return d.Type, true
	}
	if a, ok := strings.CutPrefix(key, "device.attr."); ok {
		v, ok := d.Attributes[a]
		return v, ok
	}
	return "", false
}

// nodeOK reports whether node n satisfies every constraint.
func (m *matcher) nodeOK(n *Node, cs []Constraint) bool {
	for _, c := range cs {
		l, lok := nodeValue(n, c.LTarget)
		r, rok := nodeValue(n, c.RTarget)
		if !m.holds(c.Operand, l, lok, r, rok, false) {
			return false
		}
	}
	return true
}

// deviceOK reports whether device group d satisfies every constraint.
func (m *matcher) deviceOK(d *DeviceGroup, cs []Constraint) bool {
	for _, c := range cs {
		l, lok := deviceValue(d, c.LTarget)
		r, rok := deviceValue(d, c.RTarget)
		if !m.holds(c.Operand, l, lok, r, rok, true) {
			return false
		}
	}
	return true
}

// holds evaluates one operand. Operands the engine does not model
// (distinct_hosts, distinct_property, semver, …) are left to Nomad's
// scheduler and count as satisfied here.
func (m *matcher) holds(op, l string, lok bool, r string, rok bool, typed bool) bool {
	switch op {
	case "is_set":
		return lok
	case "is_not_set":
		return !lok
	case "!=", "not":
		// As Nomad's checkConstraint: nil != nil is false, nil != some
		// is true.
		if lok != rok {
			return true
		}
		return lok && !equal(l, r, typed)
	}
	if !lok || !rok {
		return false
	}
	switch op {
	case "", "=", "==", "is":
		return equal(l, r, typed)
	case "<", "<=", ">", ">=":
		return compare(op, l, r, typed)
	case "regexp":
		return m.regexp(r).MatchString(l)
	case "set_contains", "set_contains_all":
		return setContains(l, r, false)
	case "set_contains_any":
		return setContains(l, r, true)
	}
	return true
}

func (m *matcher) regexp(expr string) *regexp.Regexp {
	re, ok := m.regexps[expr]
	if !ok {
		var err error
		if re, err = regexp.Compile(expr); err != nil {
			re = regexp.MustCompile(`^\b$`) // never matches, like Nomad
		}
		m.regexps[expr] = re
	}
	return re
}

// equal compares l and r: device attributes typed, with their units
// (Nomad's checkAttributeConstraint: "80 GiB" equals "81920 MiB"; values
// that do not compare are not equal), other values as strings.
func equal(l, r string, typed bool) bool {
	if !typed {
		return l == r
	}
	c, ok := psstructs.ParseAttribute(l).Compare(psstructs.ParseAttribute(r))
	return ok && c == 0
}

// compare orders l and r: device attributes with units ("40 GiB") through
// Nomad's attribute type, otherwise as numbers, otherwise as strings.
func compare(op, l, r string, typed bool) bool {
	var cmp int
	if typed {
		la, ra := psstructs.ParseAttribute(l), psstructs.ParseAttribute(r)
		c, ok := la.Compare(ra)
		if !ok {
			return false
		}
		cmp = c
	} else if lf, err1 := strconv.ParseFloat(l, 64); err1 == nil {
		rf, err2 := strconv.ParseFloat(r, 64)
		if err2 != nil {
			return false
		}
		cmp = floatCmp(lf, rf)
	} else {
		cmp = strings.Compare(l, r)
	}
	switch op {
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	}
	return cmp >= 0
}

func floatCmp(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func setContains(l, r string, any bool) bool {
	have := map[string]bool{}
	for _, s := range strings.Split(l, ",") {
		have[strings.TrimSpace(s)] = true
	}
	for _, s := range strings.Split(r, ",") {
		ok := have[strings.TrimSpace(s)]
		if any && ok {
			return true
		}
		if !any && !ok {
			return false
		}
	}
	return !any
}

// DeviceMatches reports whether a jobspec device name selects device
// group d: "gpu" by type, "nvidia/gpu" by vendor and type,
// "nvidia/gpu/H200" by vendor, type and model; any other name selects
// nothing. It is the one rule the engine and the pools API share.
func DeviceMatches(name string, d *DeviceGroup) bool {
	// Cut, not Split: placement asks it for every node a job may fit.
	first, rest, two := strings.Cut(name, "/")
	if !two {
		return first == d.Type
	}
	second, third, three := strings.Cut(rest, "/")
	switch {
	case !three:
		return first == d.Vendor && second == d.Type
	case strings.Contains(third, "/"):
		return false
	}
	return first == d.Vendor && second == d.Type && third == d.Model
}

// deviceNameType returns the device type a jobspec device name names:
// the second of two or three parts, else the name's first part.
func deviceNameType(name string) string {
	first, rest, two := strings.Cut(name, "/")
	if !two {
		return first
	}
	second, third, three := strings.Cut(rest, "/")
	if three && strings.Contains(third, "/") {
		return first
	}
	return second
}
