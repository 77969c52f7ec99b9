package inventory

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/device-plugin/accel"
)

func TestDeviceDir(t *testing.T) {
	dir := t.TempDir()
	// Plain files stand in for the nodes: Reserve only looks for them.
	for _, n := range []string{"nvidia0", "nvidia1", "nvidiactl"} {
		must.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
	}
	src := `device_dir = "` + dir + `/"
gpu "H200" {
  count      = 2
  memory_mib = 1024
}
`
	devs, err := New(writeInventory(t, "nodes.hcl", src)).Fingerprint(context.Background())
	must.NoError(t, err)
	must.Len(t, 2, devs)
	res := accel.Reservation(devs[1:])
	got := map[string]string{}
	for _, d := range res.Devices {
		got[d.TaskPath] = d.HostPath
	}
	// nvidia-uvm and nvidia-uvm-tools are not in dir, so they are left out.
	must.Eq(t, map[string]string{
		"/dev/nvidia1":   filepath.Join(dir, "nvidia1"),
		"/dev/nvidiactl": filepath.Join(dir, "nvidiactl"),
	}, got)
	must.Eq(t, devs[1].ID, res.Envs["NVIDIA_VISIBLE_DEVICES"])
}

func TestDeviceDirDefaultIsDev(t *testing.T) {
	devs := fingerprint(t, New(writeInventory(t, "plain.hcl", "gpu \"H200\" {\n  count = 1\n  memory_mib = 1024\n}\n")))
	res := accel.Reservation(devs)
	var hosts []string
	for _, d := range res.Devices {
		must.Eq(t, d.TaskPath, d.HostPath)
		hosts = append(hosts, d.HostPath)
	}
	must.Eq(t, []string{"/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidiactl"}, hosts)
}

func TestDeviceDirMustBeAbsolute(t *testing.T) {
	_, err := New(writeInventory(t, "rel.hcl", "device_dir = \"dev\"\n")).Fingerprint(context.Background())
	must.ErrorContains(t, err, "rel.hcl:1")
	must.ErrorContains(t, err, "device_dir must be an absolute path")
}
