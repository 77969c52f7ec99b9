// Package accel is the Nomad device plugin nomad-device-accel: it turns the
// devices its backends (nvml, ascend, inventory) report into Nomad device
// groups, keeps fingerprinting them every fingerprint_period, reserves them
// for tasks and streams their statistics.
package accel

import "time"

// Topology classes of a node's accelerator interconnect.
const (
	TopologyNVSwitch = "nvswitch"
	TopologyNVLink   = "nvlink"
	TopologyPCIe     = "pcie"
)

// Vendors and device types the plugin knows how to reserve.
const (
	VendorNVIDIA = "nvidia"
	VendorHuawei = "huawei"
	TypeGPU      = "gpu"
	TypeNPU      = "npu"
)

// Device is one accelerator, or one MIG instance of a GPU, as a backend sees
// it. Backends fill what they know; zero values mean "unknown" except where
// noted.
type Device struct {
	// ID is unique on the node: a GPU or MIG UUID, an NPU's logical id, or
	// the inventory's deterministic id.
	ID     string
	Vendor string // "nvidia", "huawei"
	Type   string // "gpu", "npu"
	// Model is the short model name that becomes the group name ("H200").
	Model string
	// Index is the device's minor number (/dev/nvidia<Index>,
	// /dev/davinci<Index>).
	Index int

	MemoryMiB         int64
	ComputeCapability string
	DriverVersion     string
	CUDAVersion       string
	PCIBusID          string
	// NUMANode is the device's NUMA node, -1 when unknown.
	NUMANode int
	// Topology is the node's interconnect class for this device.
	Topology string
	// NVLinkLinks counts the device's active NVLink links.
	NVLinkLinks int
	// Island numbers the set of devices that share an NVLink domain
	// (-1: none; a device alone on PCIe gets its own island).
	Island int
	// MIGProfile is set on MIG instances ("1g.18gb"); MIGParent is then
	// the parent GPU's UUID and Index its minor number.
	MIGProfile string
	MIGParent  string
	// MIGEnabled marks a whole GPU whose MIG mode is on; such a GPU is
	// offered only through its MIG instances.
	MIGEnabled  bool
	PowerLimitW int
	// NodeDir is the host directory holding the device's nodes
	// (nvidia<Index>, nvidiactl, …), which tasks see under /dev; empty
	// means /dev itself. Inventory files set it to test device isolation
	// with nodes of their own.
	NodeDir string

	Healthy    bool
	HealthDesc string
}

// Stats is one device's statistics at one moment.
type Stats struct {
	UtilizationPct float64
	MemoryUsedMiB  int64
	MemoryTotalMiB int64
	PowerW         float64
	TemperatureC   float64
	ECCErrors      int64
	// Processes is the number of processes using the device, where the
	// backend can see them (nil: unknown). The idle detector reads it to
	// find zombies.
	Processes *int64
	Timestamp time.Time
}
