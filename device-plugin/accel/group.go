package accel

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/plugins/device"
	"github.com/hashicorp/nomad/plugins/shared/structs"
)

// GroupName is the Nomad group name (the "model" in vendor/type/model) a
// device belongs to under a topology grouping:
//
//	none    H200, A100-3g.20gb (MIG instances of one profile)
//	island  H200-island0, H200-island1
//	numa    H200-numa0, H200-numa1
//
// Nomad keys a node's groups by vendor/type/name, so groups that split one
// model must carry distinct names; the `model` attribute keeps the plain
// model name for constraints.
func GroupName(d Device, grouping string) string {
	name := d.Model
	if d.MIGProfile != "" {
		name += "-" + d.MIGProfile
	}
	switch grouping {
	case GroupingIsland:
		if d.Island >= 0 {
			name += "-island" + strconv.Itoa(d.Island)
		}
	case GroupingNUMA:
		if d.NUMANode >= 0 {
			name += "-numa" + strconv.Itoa(d.NUMANode)
		}
	}
	return name
}

// groupID is the identity Nomad gives a device group.
type groupID struct{ vendor, typ, name string }

func (g groupID) String() string { return g.vendor + "/" + g.typ + "/" + g.name }

// schedulable reports whether a device is offered to Nomad: a GPU in MIG
// mode is offered only through its MIG instances.
func schedulable(d Device) bool { return !d.MIGEnabled }

// partition splits devices into groups, each sorted by index then ID, in a stable
// order of group IDs.
func partition(devs []Device, grouping string) ([]groupID, map[groupID][]Device) {
	byGroup := map[groupID][]Device{}
	for _, d := range devs {
		if !schedulable(d) {
			continue
		}
		id := groupID{d.Vendor, d.Type, GroupName(d, grouping)}
		byGroup[id] = append(byGroup[id], d)
	}
	ids := make([]groupID, 0, len(byGroup))
	for id, members := range byGroup {
		sort.Slice(members, func(i, j int) bool {
			if members[i].Index != members[j].Index {
				return members[i].Index < members[j].Index
			}
			return members[i].ID < members[j].ID
		})
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	return ids, byGroup
}

// BuildGroups turns devices into Nomad device groups under a grouping.
func BuildGroups(devs []Device, grouping string) []*device.DeviceGroup {
	ids, byGroup := partition(devs, grouping)
	groups := make([]*device.DeviceGroup, 0, len(ids))
	for _, id := range ids {
		members := byGroup[id]
		g := &device.DeviceGroup{
			Vendor:     id.vendor,
			Type:       id.typ,
			Name:       id.name,
			Attributes: groupAttributes(members, grouping),
		}
		for _, d := range members {
			inst := &device.Device{ID: d.ID, Healthy: d.Healthy, HealthDesc: d.HealthDesc}
			if d.PCIBusID != "" {
				inst.HwLocality = &device.DeviceLocality{PciBusID: d.PCIBusID}
			}
			g.Devices = append(g.Devices, inst)
		}
		groups = append(groups, g)
	}
	return groups
}

// groupAttributes are the attributes shared by a group's devices. A value
// that differs between members is left out (numa_node, island) or reduced to
// the weakest member (nvlink_links, power_limit); numa_nodes always lists
// every NUMA node the group spans.
func groupAttributes(members []Device, grouping string) map[string]*structs.Attribute {
	first := members[0]
	a := map[string]*structs.Attribute{
		"model":    structs.NewStringAttribute(first.Model),
		"topology": structs.NewStringAttribute(first.Topology),
		"mig":      structs.NewBoolAttribute(first.MIGProfile != ""),
	}
	setIf := func(key, v string) {
		if v != "" {
			a[key] = structs.NewStringAttribute(v)
		}
	}
	setIf("compute_capability", first.ComputeCapability)
	setIf("driver_version", first.DriverVersion)
	setIf("cuda_version", first.CUDAVersion)
	setIf("mig_profile", first.MIGProfile)
	minMem, minLinks, minPower := first.MemoryMiB, first.NVLinkLinks, first.PowerLimitW
	numa, island := map[int]bool{}, map[int]bool{}
	topo := map[string]bool{}
	for _, d := range members {
		minMem = minOf(minMem, d.MemoryMiB)
		minLinks = minOf(minLinks, d.NVLinkLinks)
		minPower = minOf(minPower, d.PowerLimitW)
		numa[d.NUMANode] = true
		island[d.Island] = true
		topo[d.Topology] = true
	}
	if len(topo) > 1 {
		a["topology"] = structs.NewStringAttribute("mixed")
	}
	if minMem > 0 {
		a["memory"] = structs.NewIntAttribute(minMem, structs.UnitMiB)
	}
	a["nvlink_links"] = structs.NewIntAttribute(int64(minLinks), "")
	if minPower > 0 {
		a["power_limit"] = structs.NewIntAttribute(int64(minPower), structs.UnitW)
	}
	if len(numa) == 1 && first.NUMANode >= 0 {
		a["numa_node"] = structs.NewIntAttribute(int64(first.NUMANode), "")
	}
	if s := joinKnown(numa); s != "" {
		a["numa_nodes"] = structs.NewStringAttribute(s)
	}
	if len(island) == 1 && first.Island >= 0 && grouping == GroupingIsland {
		a["island"] = structs.NewIntAttribute(int64(first.Island), "")
	}
	return a
}

// joinKnown lists the non-negative keys, sorted, comma-separated.
func joinKnown(set map[int]bool) string {
	var ks []int
	for k := range set {
		if k >= 0 {
			ks = append(ks, k)
		}
	}
	sort.Ints(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = strconv.Itoa(k)
	}
	return strings.Join(parts, ",")
}

// fingerprintKey is a canonical text of groups, to send only changes.
func fingerprintKey(groups []*device.DeviceGroup) string {
	var b strings.Builder
	for _, g := range groups {
		fmt.Fprintf(&b, "%s/%s/%s{", g.Vendor, g.Type, g.Name)
		keys := make([]string, 0, len(g.Attributes))
		for k := range g.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%s;", k, g.Attributes[k].GoString())
		}
		for _, d := range g.Devices {
			fmt.Fprintf(&b, "[%s %t %s]", d.ID, d.Healthy, d.HealthDesc)
		}
		b.WriteString("}")
	}
	return b.String()
}

func minOf[T int | int64](a, b T) T {
	if b < a {
		return b
	}
	return a
}
