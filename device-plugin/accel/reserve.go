package accel

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/plugins/device"
)

// NVIDIA device nodes every GPU task needs besides its /dev/nvidia<N>.
var nvidiaControlNodes = []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}

// Ascend device nodes every NPU task needs besides its /dev/davinci<N>.
var ascendControlNodes = []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}

// Reserve returns the environment and device nodes a task needs for the
// given devices: NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES (UUIDs)
// with /dev/nvidia* for GPUs, ASCEND_VISIBLE_DEVICES with /dev/davinci* for
// NPUs (their device indexes). Unknown IDs give an *UnknownDeviceError.
func (p *Plugin) Reserve(ids []string) (*device.ContainerReservation, error) {
	if len(ids) == 0 {
		return &device.ContainerReservation{}, nil
	}
	devs, err := p.lookup(ids)
	if err != nil {
		return nil, err
	}
	return Reservation(devs), nil
}

// lookup finds devices by ID in the latest snapshot, fingerprinting once
// when the plugin has not yet (a restarted plugin asked to reserve first).
func (p *Plugin) lookup(ids []string) ([]Device, error) {
	p.mu.Lock()
	empty := len(p.devices) == 0
	p.mu.Unlock()
	if empty {
		if _, err := p.config(); err != nil {
			return nil, err
		}
		p.snapshot(context.Background())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var devs []Device
	var unknown []string
	for _, id := range ids {
		d, ok := p.devices[id]
		if !ok {
			unknown = append(unknown, id)
			continue
		}
		devs = append(devs, d)
	}
	if len(unknown) > 0 {
		return nil, &UnknownDeviceError{IDs: unknown}
	}
	return devs, nil
}

// Reservation builds the container reservation for devices, in the order
// given.
func Reservation(devs []Device) *device.ContainerReservation {
	res := &device.ContainerReservation{Envs: map[string]string{}}
	var gpus, npus []string
	nodes := map[string]string{} // task path → host path
	for _, d := range devs {
		switch d.Vendor {
		case VendorNVIDIA:
			gpus = append(gpus, d.ID)
			addNodes(nodes, d.NodeDir, "nvidia"+strconv.Itoa(d.Index), nvidiaControlNodes)
		case VendorHuawei:
			npus = append(npus, strconv.Itoa(d.Index))
			addNodes(nodes, d.NodeDir, "davinci"+strconv.Itoa(d.Index), ascendControlNodes)
		}
	}
	if len(gpus) > 0 {
		res.Envs["NVIDIA_VISIBLE_DEVICES"] = strings.Join(gpus, ",")
		res.Envs["CUDA_VISIBLE_DEVICES"] = strings.Join(gpus, ",")
	}
	if len(npus) > 0 {
		res.Envs["ASCEND_VISIBLE_DEVICES"] = strings.Join(npus, ",")
	}
	paths := make([]string, 0, len(nodes))
	for n := range nodes {
		paths = append(paths, n)
	}
	sort.Strings(paths)
	for _, n := range paths {
		res.Devices = append(res.Devices, &device.DeviceSpec{TaskPath: n, HostPath: nodes[n], CgroupPerms: "rwm"})
	}
	return res
}

// addNodes adds a device's own node and the control nodes of its vendor,
// as the task sees them (/dev/…) and as they are on the host. Outside
// /dev (NodeDir) a control node is added only where the directory has one.
func addNodes(nodes map[string]string, dir, own string, control []string) {
	if dir == "" || filepath.Clean(dir) == "/dev" {
		nodes["/dev/"+own] = "/dev/" + own
		for _, n := range control {
			nodes[n] = n
		}
		return
	}
	nodes["/dev/"+own] = filepath.Join(dir, own)
	for _, n := range control {
		host := filepath.Join(dir, filepath.Base(n))
		if _, err := os.Stat(host); err == nil {
			nodes[n] = host
		}
	}
}
