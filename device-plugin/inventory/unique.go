package inventory

import (
	"fmt"

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
