//go:build linux && cgo

// Package nvml is nomad-device-accel's backend for NVIDIA GPUs. It talks to
// NVML only through an injected nvml.Interface (go-nvml), so tests drive it
// with go-nvml's mock servers and nothing calls the library at package
// level.
package nvml

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// BackendName is the backend's name in the plugin config.
const BackendName = "nvml"

// Backend fingerprints NVIDIA GPUs through NVML.
type Backend struct {
	lib    nvml.Interface
	logger hclog.Logger
	benign map[uint64]bool
	now    func() time.Time

	mu sync.Mutex
	// events receives XID events of every registered GPU; nil when NVML
	// cannot create event sets.
	events nvml.EventSet
	// registered are the UUIDs whose events are registered.
	registered map[string]bool
	// xid holds sticky health verdicts by UUID: a GPU that raised a
	// critical XID stays unhealthy until it is reset (the plugin restarts).
	xid map[string]string
	// allXID is set by an XID event that names no device (NVML's way of
	// saying "all of them").
	allXID string
}

// Factory opens the real NVML library; it reports accel.ErrNotDetected
// when the library or driver is missing, so "detect" skips it.
func Factory(logger hclog.Logger) accel.Factory {
	return func(cfg *accel.Config) (accel.Backend, error) {
		return New(nvml.New(), cfg.BenignXIDs, logger.Named(BackendName))
	}
}

// New initialises NVML through lib and returns the backend.
func New(lib nvml.Interface, benignXIDs []int, logger hclog.Logger) (*Backend, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		err := fmt.Errorf("nvml init: %s", errorString(ret))
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND || ret == nvml.ERROR_DRIVER_NOT_LOADED || ret == nvml.ERROR_NO_PERMISSION {
			err = fmt.Errorf("%w: %v", accel.ErrNotDetected, err)
		}
		return nil, err
	}
	b := &Backend{
		lib:        lib,
		logger:     logger,
		benign:     map[uint64]bool{},
		now:        time.Now,
		registered: map[string]bool{},
		xid:        map[string]string{},
	}
	for _, x := range benignXIDs {
		b.benign[uint64(x)] = true
	}
	if set, ret := lib.EventSetCreate(); ret == nvml.SUCCESS {
		b.events = set
	} else {
		logger.Warn("nvml event sets unavailable; XID health checks disabled", "error", errorString(ret))
	}
	return b, nil
}

// Name implements accel.Backend.
func (b *Backend) Name() string { return BackendName }

// Close frees the event set and shuts NVML down.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.events != nil {
		_ = b.events.Free()
		b.events = nil
	}
	if ret := b.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml shutdown: %s", errorString(ret))
	}
	return nil
}

// Fingerprint enumerates the GPUs, drains pending XID events into their
// health, and works out the node's NVLink topology and NUMA layout.
func (b *Backend) Fingerprint(context.Context) ([]accel.Device, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	count, ret := b.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, &accel.FingerprintError{Backend: BackendName, Source: "nvmlDeviceGetCount", Err: nvmlError(ret)}
	}
	driver, _ := b.lib.SystemGetDriverVersion()
	cuda := ""
	if v, ret := b.lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		cuda = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	var gpus []*gpu
	for i := 0; i < count; i++ {
		g := b.probe(i)
		if g == nil {
			continue
		}
		g.dev.DriverVersion, g.dev.CUDAVersion = driver, cuda
		gpus = append(gpus, g)
	}
	b.registerEvents(gpus)
	b.drainEvents()
	classifyTopology(gpus)
	fillNUMAFromAncestors(gpus)
	return b.devices(gpus), nil
}

// devices applies XID health and flattens GPUs and their MIG instances.
func (b *Backend) devices(gpus []*gpu) []accel.Device {
	present := map[string]bool{}
	var out []accel.Device
	for _, g := range gpus {
		present[g.dev.ID] = true
		reason := b.xid[g.dev.ID]
		if reason == "" {
			reason = b.allXID
		}
		if reason != "" && g.dev.Healthy {
			g.dev.Healthy, g.dev.HealthDesc = false, reason
		}
		out = append(out, g.dev)
		for _, m := range g.mig {
			m.Topology, m.Island, m.NUMANode, m.NVLinkLinks = g.dev.Topology, g.dev.Island, g.dev.NUMANode, g.dev.NVLinkLinks
			m.DriverVersion, m.CUDAVersion, m.ComputeCapability = g.dev.DriverVersion, g.dev.CUDAVersion, g.dev.ComputeCapability
			if !g.dev.Healthy && m.Healthy {
				m.Healthy, m.HealthDesc = false, g.dev.HealthDesc
			}
			out = append(out, m)
		}
	}
	// Vanished GPUs lose their verdicts; a GPU that comes back after a
	// reset starts healthy.
	for id := range b.xid {
		if !present[id] {
			delete(b.xid, id)
			delete(b.registered, id)
		}
	}
	return out
}

// registerEvents subscribes new GPUs to critical XID events.
func (b *Backend) registerEvents(gpus []*gpu) {
	if b.events == nil {
		return
	}
	for _, g := range gpus {
		if b.registered[g.dev.ID] {
			continue
		}
		if ret := g.h.RegisterEvents(nvml.EventTypeXidCriticalError, b.events); ret != nvml.SUCCESS {
			b.logger.Warn("cannot watch gpu for xid errors", "uuid", g.dev.ID, "error", errorString(ret))
		}
		b.registered[g.dev.ID] = true
	}
}

// drainEvents reads every pending event without blocking.
func (b *Backend) drainEvents() {
	if b.events == nil {
		return
	}
	for i := 0; i < 10000; i++ {
		e, ret := b.events.Wait(0)
		if ret != nvml.SUCCESS {
			if ret != nvml.ERROR_TIMEOUT {
				b.logger.Warn("reading nvml events", "error", errorString(ret))
			}
			return
		}
		b.handleEvent(e)
	}
}

func (b *Backend) handleEvent(e nvml.EventData) {
	if e.EventType&nvml.EventTypeXidCriticalError == 0 || b.benign[e.EventData] {
		return
	}
	reason := fmt.Sprintf("XID %d critical error", e.EventData)
	if e.Device == nil {
		b.allXID = reason
		return
	}
	id, ret := e.Device.GetUUID()
	if ret != nvml.SUCCESS {
		b.allXID = reason
		return
	}
	if _, seen := b.xid[id]; !seen {
		b.logger.Error("gpu unhealthy", "uuid", id, "xid", e.EventData)
	}
	b.xid[id] = reason
}

// Stats reads utilization, memory, power, temperature, volatile
// uncorrected ECC errors and running processes. A metric NVML does not
// support stays zero, except processes, which stay unknown (nil).
func (b *Backend) Stats(_ context.Context, devs []accel.Device) (map[string]accel.Stats, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]accel.Stats, len(devs))
	var errs []error
	for _, d := range devs {
		h, ret := b.lib.DeviceGetHandleByUUID(d.ID)
		if ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("gpu %s: %w", d.ID, nvmlError(ret)))
			continue
		}
		out[d.ID] = readStats(h, b.now())
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func readStats(h nvml.Device, now time.Time) accel.Stats {
	s := accel.Stats{Timestamp: now}
	if u, ret := h.GetUtilizationRates(); ret == nvml.SUCCESS {
		s.UtilizationPct = float64(u.Gpu)
	}
	if m, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
		s.MemoryUsedMiB, s.MemoryTotalMiB = int64(m.Used>>20), int64(m.Total>>20)
	}
	if p, ret := h.GetPowerUsage(); ret == nvml.SUCCESS {
		s.PowerW = float64(p) / 1000
	}
	if t, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
		s.TemperatureC = float64(t)
	}
	if e, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); ret == nvml.SUCCESS {
		s.ECCErrors = int64(e)
	}
	s.Processes = runningProcesses(h)
	return s
}

// runningProcesses counts the compute and graphics processes on a device;
// a process in both lists counts once. When NVML cannot list one of them
// (NOT_SUPPORTED, NO_PERMISSION, …) the count is unknown (nil), never zero,
// unless the other list already holds a process: then it is a lower bound,
// which is all the idle detector needs to know the device is busy.
func runningProcesses(h nvml.Device) *int64 {
	compute, cret := h.GetComputeRunningProcesses()
	graphics, gret := h.GetGraphicsRunningProcesses()
	if cret != nvml.SUCCESS {
		compute = nil
	}
	if gret != nvml.SUCCESS {
		graphics = nil
	}
	seen := make(map[uint32]bool, len(compute))
	for _, p := range compute {
		seen[p.Pid] = true
	}
	n := int64(len(compute))
	for _, p := range graphics {
		if !seen[p.Pid] {
			n++
		}
	}
	if (cret != nvml.SUCCESS || gret != nvml.SUCCESS) && n == 0 {
		return nil
	}
	return &n
}

// nvmlError wraps an NVML return code as an error.
func nvmlError(ret nvml.Return) error { return errors.New(errorString(ret)) }

// errorString names a return code without calling into the library
// (nvml.ErrorString needs a loaded libnvidia-ml).
func errorString(ret nvml.Return) string {
	if s, ok := returnNames[ret]; ok {
		return s
	}
	return fmt.Sprintf("nvml return %d", int32(ret))
}

var returnNames = map[nvml.Return]string{
	nvml.SUCCESS:                       "success",
	nvml.ERROR_UNINITIALIZED:           "nvml not initialized",
	nvml.ERROR_INVALID_ARGUMENT:        "invalid argument",
	nvml.ERROR_NOT_SUPPORTED:           "not supported",
	nvml.ERROR_NO_PERMISSION:           "no permission",
	nvml.ERROR_NOT_FOUND:               "not found",
	nvml.ERROR_INSUFFICIENT_POWER:      "insufficient external power",
	nvml.ERROR_DRIVER_NOT_LOADED:       "driver not loaded",
	nvml.ERROR_TIMEOUT:                 "timeout",
	nvml.ERROR_IRQ_ISSUE:               "interrupt request issue",
	nvml.ERROR_LIBRARY_NOT_FOUND:       "libnvidia-ml.so not found",
	nvml.ERROR_GPU_IS_LOST:             "GPU is lost (fell off the bus)",
	nvml.ERROR_RESET_REQUIRED:          "GPU requires a reset",
	nvml.ERROR_OPERATING_SYSTEM:        "operating system call failed",
	nvml.ERROR_MEMORY:                  "insufficient memory",
	nvml.ERROR_UNKNOWN:                 "unknown nvml error",
	nvml.ERROR_CORRUPTED_INFOROM:       "corrupted inforom",
	nvml.ERROR_LIB_RM_VERSION_MISMATCH: "driver/library version mismatch",
}
