//go:build linux && cgo

package nvml

import (
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// box wraps a go-nvml mock server and fills in the functions the mock
// leaves unset (PCI bus ids, NUMA, NVLink, topology, events, power, stats),
// so scenarios only override what they are about.
type box struct {
	srv  *server.Server
	gpus []*server.Device

	mu     sync.Mutex
	queue  []nvml.EventData
	freed  bool
	migSet map[int][]*mock.Device
}

// h200Box is an 8×H200 NVSwitch system (mock/dgxh200).
func h200Box() *box {
	b := newBox(dgxh200.New())
	b.nvswitch(18)
	b.numa(func(i int) int { return i / 4 })
	return b
}

// a100PairsBox is a PCIe box of 4 A100s bridged as two NVLink pairs
// (mock/dgxa100 with PCIe A100s).
func a100PairsBox() *box {
	b := newBox(dgxa100.NewWithGPUs(gpus.Multiple(4, gpus.A100_PCIE_40GB)...))
	b.pairs(4)
	return b
}

func newBox(srv *server.Server) *box {
	b := &box{srv: srv, migSet: map[int][]*mock.Device{}}
	for _, d := range srv.Devices {
		b.gpus = append(b.gpus, d.(*server.Device))
	}
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{WaitFunc: b.wait, FreeFunc: b.free}, nvml.SUCCESS
	}
	for i, d := range b.gpus {
		i, d := i, d
		bus := b.bus(i)
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pciInfo(bus), nvml.SUCCESS }
		d.GetNumaNodeIdFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS }
		d.GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		d.GetNvLinkRemotePciInfoFunc = func(int) (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_NOT_SUPPORTED }
		d.GetTopologyCommonAncestorFunc = func(o nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			j := o.(*server.Device).Index
			if i/(len(b.gpus)/2+1) == j/(len(b.gpus)/2+1) {
				return nvml.TOPOLOGY_NODE, nvml.SUCCESS
			}
			return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
		}
		d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: uint32(10 * i), Memory: 5}, nvml.SUCCESS
		}
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(100000 + 1000*i), nvml.SUCCESS }
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(40 + i), nvml.SUCCESS }
		d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
		d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
		d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
		d.GetMigDeviceHandleByIndexFunc = func(j int) (nvml.Device, nvml.Return) {
			b.mu.Lock()
			defer b.mu.Unlock()
			if j < len(b.migSet[i]) {
				return b.migSet[i][j], nvml.SUCCESS
			}
			return nil, nvml.ERROR_NOT_FOUND
		}
		d.MemoryInfo.Used = d.MemoryInfo.Total / 4
	}
	return b
}

func (b *box) bus(i int) string { return fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10) }

func pciInfo(bus string) nvml.PciInfo {
	var p nvml.PciInfo
	for k := 0; k < len(bus) && k < len(p.BusId)-1; k++ {
		p.BusId[k] = int8(bus[k])
	}
	return p
}

// nvswitch attaches every GPU to NVSwitches with n active links.
func (b *box) nvswitch(n int) {
	for _, d := range b.gpus {
		d.GetNvLinkStateFunc = linkStates(n, 18)
		d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
			return pciInfo(fmt.Sprintf("00000000:%02X:00.0", 0xE0+l%4)), nvml.SUCCESS // a switch, not a GPU
		}
	}
}

// pairs bridges GPUs 0-1, 2-3, … with n NVLinks each.
func (b *box) pairs(n int) {
	for i, d := range b.gpus {
		peer := b.bus(i ^ 1)
		d.GetNvLinkStateFunc = linkStates(n, 12)
		d.GetNvLinkRemotePciInfoFunc = func(int) (nvml.PciInfo, nvml.Return) { return pciInfo(peer), nvml.SUCCESS }
	}
}

// linkStates has links 0..active-1 enabled, up to max links.
func linkStates(active, max int) func(int) (nvml.EnableState, nvml.Return) {
	return func(l int) (nvml.EnableState, nvml.Return) {
		switch {
		case l >= max:
			return 0, nvml.ERROR_INVALID_ARGUMENT
		case l < active:
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		default:
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		}
	}
}

func (b *box) numa(f func(int) int) {
	for i, d := range b.gpus {
		n := f(i)
		d.GetNumaNodeIdFunc = func() (int, nvml.Return) { return n, nvml.SUCCESS }
	}
}

// enableMIG puts GPU i in MIG mode with instances of the given profiles.
func (b *box) enableMIG(i int, profiles ...string) {
	d := b.gpus[i]
	d.SetMigMode(nvml.DEVICE_MIG_ENABLE)
	b.mu.Lock()
	defer b.mu.Unlock()
	for j, p := range profiles {
		id := fmt.Sprintf("MIG-%s-%d", d.UUID[4:], j)
		name := fmt.Sprintf("%s MIG %s", d.Config.Name, p)
		b.migSet[i] = append(b.migSet[i], &mock.Device{
			GetUUIDFunc:       func() (string, nvml.Return) { return id, nvml.SUCCESS },
			GetNameFunc:       func() (string, nvml.Return) { return name, nvml.SUCCESS },
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 20096 << 20}, nvml.SUCCESS },
		})
	}
}

// xid queues an XID event for GPU i (-1: an event naming no device).
func (b *box) xid(i int, xid uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := nvml.EventData{EventType: nvml.EventTypeXidCriticalError, EventData: xid}
	if i >= 0 {
		e.Device = b.gpus[i]
	}
	b.queue = append(b.queue, e)
}

func (b *box) wait(uint32) (nvml.EventData, nvml.Return) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		return nvml.EventData{}, nvml.ERROR_TIMEOUT
	}
	e := b.queue[0]
	b.queue = b.queue[1:]
	return e, nvml.SUCCESS
}

func (b *box) free() nvml.Return {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.freed = true
	return nvml.SUCCESS
}

// vanish makes the last n GPUs disappear from enumeration.
func (b *box) vanish(n int) {
	count := len(b.gpus) - n
	b.srv.DeviceGetCountFunc = func() (int, nvml.Return) { return count, nvml.SUCCESS }
}
