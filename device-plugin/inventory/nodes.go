package inventory

import (
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// deviceDirKey is the optional top-level attribute naming the host
// directory that holds the inventory's device nodes: GPU i is
// <device_dir>/nvidia<i> (NPU i <device_dir>/davinci<i>), and control
// nodes (nvidiactl, nvidia-uvm, …) are used where the directory has them.
// Reserve hands those nodes to tasks as /dev/nvidia<i>, so an isolating
// driver can be tested without GPUs: the test creates the nodes (mknod).
// Without it the nodes are the host's /dev/nvidia<i>, as on a real node.
const deviceDirKey = "device_dir"

// decodeDeviceDir reads device_dir into inv; it must be an absolute path.
func decodeDeviceDir(body *hclsyntax.Body, inv *Inventory) hcl.Diagnostics {
	diags := decodeAttr(body, deviceDirKey, &inv.DeviceDir)
	if diags.HasErrors() || inv.DeviceDir == "" {
		return diags
	}
	if !filepath.IsAbs(inv.DeviceDir) {
		return errAt(body.Attributes[deviceDirKey].SrcRange, "device_dir must be an absolute path",
			"got "+inv.DeviceDir+`; e.g. device_dir = "/var/lib/allot/fake-dev"`)
	}
	inv.DeviceDir = filepath.Clean(inv.DeviceDir)
	return nil
}

// withDeviceDir points the devices at the inventory's device nodes.
func withDeviceDir(devs []accel.Device, dir string) {
	for i := range devs {
		devs[i].NodeDir = dir
	}
}
