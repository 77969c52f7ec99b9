package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// defaultLinks is each GPU's NVLink count when the file does not say.
var defaultLinks = map[string]int{"nvswitch": 18, "nvlink": 12}

// Devices expands the inventory into devices with deterministic IDs:
// GPUs get "GPU-<uuid>" and MIG instances "MIG-<uuid>", both derived from
// the seed, model and index; NPUs get their device index ("0", "1", …) as
// npu-smi numbers them. GPU and NPU indexes (minor numbers) count up across
// blocks in file order. Parse refuses files whose devices would share an
// ID, so the IDs are distinct.
func (inv *Inventory) Devices() []accel.Device {
	var out []accel.Device
	inv.expand(func(_ *Model, d accel.Device) { out = append(out, d) })
	return out
}

// expand calls emit for every device in order, with the block it comes
// from.
func (inv *Inventory) expand(emit func(*Model, accel.Device)) {
	next := map[string]int{}
	for _, m := range inv.Models {
		islands := islandOf(m)
		migOn := map[int][]*MIG{}
		for _, mig := range m.MIG {
			for _, g := range mig.GPUs {
				migOn[g] = append(migOn[g], mig)
			}
		}
		for i := 0; i < m.Count; i++ {
			idx := next[m.Kind]
			next[m.Kind]++
			d := inv.device(m, i, idx, islands[i])
			d.MIGEnabled = len(migOn[i]) > 0
			emit(m, d)
			for _, inst := range inv.migInstances(d, migOn[i]) {
				emit(m, inst)
			}
		}
	}
}

func (inv *Inventory) device(m *Model, local, idx, island int) accel.Device {
	d := accel.Device{
		Vendor:            m.Vendor,
		Type:              m.Kind,
		Model:             m.Name,
		Index:             idx,
		MemoryMiB:         m.MemoryMiB,
		ComputeCapability: m.ComputeCapability,
		PowerLimitW:       m.PowerLimitW,
		NUMANode:          0,
		Topology:          m.Topology,
		Island:            island,
		Healthy:           true,
	}
	if len(m.NUMANodes) == m.Count {
		d.NUMANode = m.NUMANodes[local]
	}
	if m.Kind == "gpu" {
		d.ID = "GPU-" + uuidFrom(inv.Seed, "gpu", m.Name, fmt.Sprint(local))
		d.DriverVersion, d.CUDAVersion = inv.DriverVersion, inv.CUDAVersion
		d.PCIBusID = fmt.Sprintf("%08X:%02X:00.0", idx/14, 0x18+(idx%14)*0x10)
	} else {
		d.ID = fmt.Sprint(idx)
		d.PCIBusID = fmt.Sprintf("%08X:%02X:00.0", idx/48, 0xC1+idx%48)
	}
	d.NVLinkLinks = linksFor(m, island, islandSize(m, island))
	if d.Topology == "nvlink" && islandSize(m, island) < 2 {
		d.Topology = "pcie"
	}
	return d
}

func (inv *Inventory) migInstances(parent accel.Device, migs []*MIG) []accel.Device {
	var out []accel.Device
	for _, mig := range migs {
		for j := 0; j < mig.Count; j++ {
			d := parent
			d.ID = "MIG-" + uuidFrom(inv.Seed, "mig", parent.ID, mig.Profile, fmt.Sprint(j))
			d.MIGProfile, d.MIGParent, d.MIGEnabled = mig.Profile, parent.ID, false
			d.MemoryMiB = mig.MemoryMiB
			out = append(out, d)
		}
	}
	return out
}

// islandOf numbers the NVLink domains of a model block: one island for an
// NVSwitch or HCCS box, the listed islands for nvlink, and an island per
// device for PCIe-only devices.
func islandOf(m *Model) []int {
	isl := make([]int, m.Count)
	switch m.Topology {
	case "nvswitch", "hccs":
		return isl
	case "nvlink":
		for i := range isl {
			isl[i] = -1
		}
		for n, members := range m.Islands {
			for _, i := range members {
				isl[i] = n
			}
		}
		n := len(m.Islands)
		for i := range isl {
			if isl[i] < 0 {
				isl[i], n = n, n+1
			}
		}
		return isl
	default:
		for i := range isl {
			isl[i] = i
		}
		return isl
	}
}

func islandSize(m *Model, island int) int {
	switch m.Topology {
	case "nvswitch", "hccs":
		return m.Count
	case "nvlink":
		if island < len(m.Islands) {
			return len(m.Islands[island])
		}
	}
	return 1
}

func linksFor(m *Model, island, size int) int {
	if size < 2 || m.Topology == "hccs" {
		return 0
	}
	if m.NVLinkLinks >= 0 {
		return m.NVLinkLinks
	}
	return defaultLinks[m.Topology]
}

// uuidFrom formats a SHA-256 of the parts as a UUID (8-4-4-4-12 hex).
func uuidFrom(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "|")))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// applyHealth marks the devices the unhealthy list names. An entry is a
// device ID or "Model[i]" (i counting from 0 within that model's block),
// optionally followed by ": reason". Entries that name no device are
// returned so the caller can log them.
func applyHealth(devs []accel.Device, entries []string, file string) (unmatched []string) {
	byRef := map[string][]int{}
	local := map[string]int{}
	for i, d := range devs {
		byRef[d.ID] = append(byRef[d.ID], i)
		if d.MIGProfile == "" {
			ref := fmt.Sprintf("%s[%d]", d.Model, local[d.Model])
			local[d.Model]++
			byRef[ref] = append(byRef[ref], i)
		}
	}
	for _, e := range entries {
		ref, reason, _ := strings.Cut(e, ":")
		ref, reason = strings.TrimSpace(ref), strings.TrimSpace(reason)
		if reason == "" {
			reason = "listed unhealthy in " + file
		}
		hits := byRef[ref]
		if len(hits) == 0 {
			unmatched = append(unmatched, ref)
		}
		for _, i := range hits {
			devs[i].Healthy, devs[i].HealthDesc = false, reason
			// A broken GPU takes its MIG instances with it.
			for j := range devs {
				if devs[j].MIGParent == devs[i].ID {
					devs[j].Healthy, devs[j].HealthDesc = false, reason
				}
			}
		}
	}
	return unmatched
}
