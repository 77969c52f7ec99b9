package inventory

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// duplicateBlocks refuses what would give two devices one ID (audit #26):
// a model written in two blocks (GPU IDs derive from the model name and
// the index within its block, so the second block repeats the first's),
// and one MIG profile declared twice on one GPU (instance IDs derive from
// the parent, the profile and the instance number). Each error points at
// the second block and names the line of the first.
func duplicateBlocks(models []*Model) hcl.Diagnostics {
	var diags hcl.Diagnostics
	first := map[string]*Model{}
	for _, m := range models {
		key := m.Kind + " " + m.Name
		if prev, ok := first[key]; ok {
			diags = append(diags, errAt(m.rng, "model defined twice",
				fmt.Sprintf("%s %q is already defined on line %d; its device IDs would repeat: put all %s devices in one block (numa_nodes places them on sockets)",
					m.Kind, m.Name, prev.rng.Start.Line, m.Name))...)
			continue
		}
		first[key] = m
		diags = append(diags, duplicateMIG(m)...)
	}
	return diags
}

func duplicateMIG(m *Model) hcl.Diagnostics {
	var diags hcl.Diagnostics
	type slot struct {
		profile string
		gpu     int
	}
	seen := map[slot]*MIG{}
	for _, mig := range m.MIG {
		for _, g := range mig.GPUs {
			s := slot{mig.Profile, g}
			if prev, ok := seen[s]; ok && prev != mig {
				diags = append(diags, errAt(mig.rng, "mig profile defined twice on one gpu",
					fmt.Sprintf("mig %q on gpu %d is already defined on line %d; give it one block with the total count", mig.Profile, g, prev.rng.Start.Line))...)
				continue
			}
			seen[s] = mig
		}
	}
	return diags
}

// duplicateIDs expands the inventory and refuses any device ID given
// twice, at the block that repeats it. duplicateBlocks rules out every
// known cause; this is the guarantee that holds whatever the cause.
func (inv *Inventory) duplicateIDs() hcl.Diagnostics {
	var diags hcl.Diagnostics
	from := map[string]*Model{}
	inv.expand(func(m *Model, d accel.Device) {
		if prev, ok := from[d.ID]; ok {
			diags = append(diags, errAt(m.rng, "duplicate device ID",
				fmt.Sprintf("device %s of %s %q repeats a device of the block on line %d", d.ID, m.Kind, m.Name, prev.rng.Start.Line))...)
			return
		}
		from[d.ID] = m
	})
	return diags
}

// checkUTF8 refuses a file that is not UTF-8, at its first bad byte: HCL
// would take such bytes into labels and strings, and Nomad's plugin
// protocol (protobuf) cannot carry them, so the fingerprint would fail.
func checkUTF8(filename string, src []byte) hcl.Diagnostics {
	pos := hcl.InitialPos
	for len(src) > 0 {
		r, size := utf8.DecodeRune(src)
		if r == utf8.RuneError && size <= 1 {
			end := pos
			end.Byte, end.Column = pos.Byte+1, pos.Column+1
			return errAt(hcl.Range{Filename: filename, Start: pos, End: end}, "invalid UTF-8",
				fmt.Sprintf("byte 0x%02x is not UTF-8 text", src[0]))
		}
		pos.Byte += size
		pos.Column++
		if r == '\n' {
			pos.Line, pos.Column = pos.Line+1, 1
		}
		src = src[size:]
	}
	return nil
}

// checkName refuses a model, vendor or MIG profile name that would not
// make a clean Nomad device ID ("vendor/type/model"): "/" splits the ID,
// and spaces or control characters cannot be written in a jobspec.
func checkName(name, what string, rng hcl.Range) hcl.Diagnostics {
	bad := name == "" || strings.Contains(name, "/") || strings.IndexFunc(name, func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r)
	}) >= 0
	if !bad {
		return nil
	}
	return errAt(rng, "bad "+what+" name", fmt.Sprintf("%q: a %s name is non-empty, without \"/\", spaces or control characters", name, what))
}
