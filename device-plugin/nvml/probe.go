//go:build linux && cgo

package nvml

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// gpu is one probed GPU with what topology needs.
type gpu struct {
	h   nvml.Device
	dev accel.Device
	// bus is the normalised PCI bus id; remotes are the normalised bus ids
	// at the far end of each active NVLink.
	bus     string
	remotes []string
	mig     []accel.Device
}

// probe reads one GPU. A GPU whose handle or UUID cannot be read cannot be
// offered (Nomad needs a stable ID) and is skipped; any other failing query
// marks the GPU unhealthy with the failing call and NVML's reason.
func (b *Backend) probe(i int) *gpu {
	h, ret := b.lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		b.logger.Error("cannot open gpu", "index", i, "error", errorString(ret))
		return nil
	}
	id, ret := h.GetUUID()
	if ret != nvml.SUCCESS {
		b.logger.Error("cannot read gpu uuid", "index", i, "error", errorString(ret))
		return nil
	}
	g := &gpu{h: h, dev: accel.Device{
		ID: id, Vendor: accel.VendorNVIDIA, Type: accel.TypeGPU, Index: i,
		NUMANode: -1, Island: -1, Healthy: true,
	}}
	fail := func(call string, ret nvml.Return) {
		if g.dev.Healthy {
			g.dev.Healthy, g.dev.HealthDesc = false, fmt.Sprintf("nvml %s: %s", call, errorString(ret))
		}
	}
	if name, ret := h.GetName(); ret == nvml.SUCCESS {
		g.dev.Model = ShortModel(name)
	} else {
		g.dev.Model = "unknown"
		fail("GetName", ret)
	}
	if mem, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
		g.dev.MemoryMiB = int64(mem.Total >> 20)
	} else {
		fail("GetMemoryInfo", ret)
	}
	if major, minor, ret := h.GetCudaComputeCapability(); ret == nvml.SUCCESS {
		g.dev.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	} else {
		fail("GetCudaComputeCapability", ret)
	}
	if pci, ret := h.GetPciInfo(); ret == nvml.SUCCESS {
		g.bus = busID(pci)
		g.dev.PCIBusID = g.bus
	} else {
		fail("GetPciInfo", ret)
	}
	b.probeOptional(g)
	return g
}

// probeOptional reads what older GPUs or drivers may not support; a
// missing value is not a health problem.
func (b *Backend) probeOptional(g *gpu) {
	h := g.h
	if minor, ret := h.GetMinorNumber(); ret == nvml.SUCCESS {
		g.dev.Index = minor
	}
	if numa, ret := h.GetNumaNodeId(); ret == nvml.SUCCESS {
		g.dev.NUMANode = numa
	}
	if mw, ret := h.GetEnforcedPowerLimit(); ret == nvml.SUCCESS {
		g.dev.PowerLimitW = int(mw / 1000)
	}
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		state, ret := h.GetNvLinkState(l)
		if ret != nvml.SUCCESS {
			break // NOT_SUPPORTED or INVALID_ARGUMENT: no (more) links
		}
		if state != nvml.FEATURE_ENABLED {
			continue
		}
		remote, ret := h.GetNvLinkRemotePciInfo(l)
		if ret != nvml.SUCCESS {
			continue
		}
		g.remotes = append(g.remotes, busID(remote))
	}
	if current, _, ret := h.GetMigMode(); ret == nvml.SUCCESS && current == nvml.DEVICE_MIG_ENABLE {
		g.dev.MIGEnabled = true
		g.mig = b.probeMIG(g)
	}
}

// probeMIG lists a MIG-mode GPU's instances.
func (b *Backend) probeMIG(g *gpu) []accel.Device {
	max, ret := g.h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil
	}
	var out []accel.Device
	for j := 0; j < max; j++ {
		mh, ret := g.h.GetMigDeviceHandleByIndex(j)
		if ret != nvml.SUCCESS {
			continue // ERROR_NOT_FOUND: slot not populated
		}
		id, ret := mh.GetUUID()
		if ret != nvml.SUCCESS {
			continue
		}
		m := accel.Device{
			ID: id, Vendor: accel.VendorNVIDIA, Type: accel.TypeGPU, Model: g.dev.Model,
			Index: g.dev.Index, PCIBusID: g.dev.PCIBusID, PowerLimitW: g.dev.PowerLimitW,
			MIGParent: g.dev.ID, Healthy: true,
		}
		if name, ret := mh.GetName(); ret == nvml.SUCCESS {
			m.MIGProfile = migProfile(name)
		}
		if m.MIGProfile == "" {
			m.MIGProfile = "mig"
		}
		if mem, ret := mh.GetMemoryInfo(); ret == nvml.SUCCESS {
			m.MemoryMiB = int64(mem.Total >> 20)
		} else {
			m.Healthy, m.HealthDesc = false, "nvml GetMemoryInfo: "+errorString(ret)
		}
		out = append(out, m)
	}
	return out
}

// ShortModel turns NVML's marketing name into the short model name used as
// the device group name: "NVIDIA H200 141GB HBM3e" → "H200",
// "NVIDIA A100-SXM4-40GB" → "A100", "NVIDIA RTX A6000" → "RTX-A6000".
func ShortModel(name string) string {
	s := strings.TrimSpace(name)
	for changed := true; changed; {
		changed = false
		for _, p := range []string{"Mock ", "NVIDIA ", "Tesla ", "GeForce ", "Quadro "} {
			if strings.HasPrefix(s, p) {
				s, changed = strings.TrimSpace(strings.TrimPrefix(s, p)), true
			}
		}
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return "unknown"
	}
	switch fields[0] {
	case "RTX", "GTX", "TITAN":
		if len(fields) > 1 {
			return fields[0] + "-" + fields[1]
		}
	}
	first, _, _ := strings.Cut(fields[0], "-")
	return first
}

// migProfile extracts "3g.20gb" from "NVIDIA A100-SXM4-40GB MIG 3g.20gb".
func migProfile(name string) string {
	_, after, ok := strings.Cut(name, "MIG ")
	if !ok {
		return ""
	}
	fields := strings.Fields(after)
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

// busID renders a PCI bus id the way nvidia-smi does, from BusId when NVML
// filled it, else from domain/bus/device.
func busID(p nvml.PciInfo) string {
	var b strings.Builder
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	if s := strings.ToUpper(b.String()); s != "" {
		return s
	}
	return fmt.Sprintf("%08X:%02X:%02X.0", p.Domain, p.Bus, p.Device)
}
