package dev

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/allot-sh/allot/device-plugin/accel"
	"github.com/allot-sh/allot/device-plugin/inventory"
)

// Device node numbers of the dev node's simulated accelerators: NVIDIA's
// character major with its control node's minor, and for Ascend NPUs,
// whose driver's major is assigned at load time, a major from the range
// Linux reserves for local use. No driver serves them here, so a task
// that opens its own node gets ENXIO, past the device cgroup.
const (
	nvidiaMajor   = 195
	nvidiactlMin  = 255
	davinciMajor  = 240
	deviceNodeDir = "devices"
)

// deviceInventory gives the isolated dev node's GPUs and NPUs device
// nodes the ckpt driver can pass to tasks: it writes a copy of the
// inventory with device_dir pointing at <dir>/devices and creates there,
// with mknod, nvidia<i> (195:i) and nvidiactl for every GPU and
// davinci<i> for every NPU, mode 0666 as the NVIDIA driver makes them.
// An inventory that sets device_dir itself is used as it is. It returns
// the inventory file the device plugin should read.
func deviceInventory(ctx context.Context, dir, file string) (string, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("device inventory: %w", err)
	}
	inv, diags := inventory.Parse(file, src, "")
	if diags.HasErrors() {
		return "", fmt.Errorf("device inventory %s: %s", file, diags.Error())
	}
	if inv.DeviceDir != "" {
		return file, nil
	}
	nodes := filepath.Join(dir, deviceNodeDir)
	if err := os.MkdirAll(nodes, 0o755); err != nil {
		return "", fmt.Errorf("creating device node dir: %w", err)
	}
	// The same base name keeps the inventory's default seed, and so the
	// devices' IDs.
	out := filepath.Join(dir, "inventory", filepath.Base(file))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("writing dev inventory: %w", err)
	}
	src = append(src, fmt.Sprintf("\n# Added by allotctl dev up: the device nodes it made for these devices.\ndevice_dir = %q\n", nodes)...)
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return "", fmt.Errorf("writing dev inventory: %w", err)
	}
	devs, err := inventory.New(out).Fingerprint(ctx)
	if err != nil {
		return "", fmt.Errorf("reading dev inventory %s: %w", out, err)
	}
	return out, makeNodes(nodes, devs)
}

// makeNodes creates the device nodes of devs in dir.
func makeNodes(dir string, devs []accel.Device) error {
	want := map[string]uint64{}
	for _, d := range devs {
		switch d.Vendor {
		case accel.VendorNVIDIA:
			want["nvidia"+strconv.Itoa(d.Index)] = unix.Mkdev(nvidiaMajor, uint32(d.Index))
			want["nvidiactl"] = unix.Mkdev(nvidiaMajor, nvidiactlMin)
		case accel.VendorHuawei:
			want["davinci"+strconv.Itoa(d.Index)] = unix.Mkdev(davinciMajor, uint32(d.Index))
		}
	}
	for name, dev := range want {
		p := filepath.Join(dir, name)
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(dev)); err != nil && !os.IsExist(err) {
			return fmt.Errorf("creating device node %s: %w", p, err)
		}
		if err := os.Chmod(p, 0o666); err != nil { // mknod honours the umask
			return fmt.Errorf("creating device node %s: %w", p, err)
		}
	}
	return nil
}
