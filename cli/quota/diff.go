package quota

import (
	"fmt"
	"io"
)

// Change is one meta key that differs between two versions.
type Change struct {
	Key string
	// Old and New are nil when the key is absent on that side.
	Old, New *string
}

// Diff lists the keys that differ between before and after, sorted.
func Diff(before, after map[string]string) []Change {
	keys := map[string]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	var out []Change
	for _, k := range sortedKeys(keys) {
		o, hasOld := before[k]
		n, hasNew := after[k]
		if hasOld == hasNew && o == n {
			continue
		}
		c := Change{Key: k}
		if hasOld {
			c.Old = &o
		}
		if hasNew {
			c.New = &n
		}
		out = append(out, c)
	}
	return out
}

// WriteDiff prints changes the way `terraform plan` does: + added,
// - removed, ~ changed.
func WriteDiff(w io.Writer, ns string, changes []Change) {
	if len(changes) == 0 {
		fmt.Fprintf(w, "  namespace %q: no changes\n", ns)
		return
	}
	fmt.Fprintf(w, "~ namespace %q\n", ns)
	for _, c := range changes {
		switch {
		case c.Old == nil:
			fmt.Fprintf(w, "    + %s = %q\n", c.Key, *c.New)
		case c.New == nil:
			fmt.Fprintf(w, "    - %s = %q\n", c.Key, *c.Old)
		default:
			fmt.Fprintf(w, "    ~ %s = %q -> %q\n", c.Key, *c.Old, *c.New)
		}
	}
}
