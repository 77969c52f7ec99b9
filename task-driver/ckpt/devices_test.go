package ckpt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/plugins/drivers"
	devemu "github.com/opencontainers/runc/libcontainer/cgroups/devices"
	"github.com/opencontainers/runc/libcontainer/cgroups/ebpf/devicefilter"
	ldevices "github.com/opencontainers/runc/libcontainer/devices"
	"github.com/shoenig/test/must"
)

// fakeCgroupV1 is a cgroup root with a devices hierarchy whose task
// cgroup already has its control files, and a cpuset cgroup.
func fakeCgroupV1(t *testing.T, name string) (root, cpuset string) {
	root = t.TempDir()
	dir := filepath.Join(root, "devices", name)
	cpuset = filepath.Join(root, "cpuset", "nomad", "shared")
	for _, f := range []string{filepath.Join(dir, "devices.deny"), filepath.Join(dir, "devices.allow"), filepath.Join(cpuset, "cgroup.procs")} {
		must.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
		must.NoError(t, os.WriteFile(f, nil, 0o644))
	}
	return root, cpuset
}

// TestAudit1_DeviceCgroupV1 checks the v1 devices cgroup of an isolated
// task: deny all, the executor's defaults, its reserved /dev/null-like
// node; the executor's hook gets that cgroup; the client's cpuset is
// joined after launch.
func TestAudit1_DeviceCgroupV1(t *testing.T) {
	root, cpuset := fakeCgroupV1(t, "allot-ckpt-a1-train")
	// /dev/zero stands in for a GPU node: DeviceFromPath reads its numbers.
	g, err := newDeviceCgroup(root, []*drivers.DeviceConfig{{TaskPath: "/dev/nvidia0", HostPath: "/dev/zero", Permissions: "rw"}})
	must.NoError(t, err)
	res := &drivers.Resources{LinuxResources: &drivers.LinuxResources{CpusetCgroupPath: cpuset, CPUShares: 100}}
	out, err := g.beforeLaunch("allot-ckpt-a1-train", res)
	must.NoError(t, err)
	dir := filepath.Join(root, "devices", "allot-ckpt-a1-train")
	must.Eq(t, dir, out.LinuxResources.CpusetCgroupPath)
	must.Eq(t, int64(100), out.LinuxResources.CPUShares)
	must.Eq(t, cpuset, res.LinuxResources.CpusetCgroupPath, must.Sprint("the task's own resources are not changed"))
	must.Eq(t, "a", read(t, filepath.Join(dir, "devices.deny")))
	allow := read(t, filepath.Join(dir, "devices.allow"))
	must.StrContains(t, allow, "c 1:3 rwm") // /dev/null, an executor default
	must.StrHasSuffix(t, "c 1:5 rw", allow) // the reserved node, last

	must.NoError(t, g.afterLaunch(t.TempDir(), 4242))
	must.Eq(t, "4242", read(t, filepath.Join(cpuset, "cgroup.procs")))
	must.NoError(t, os.Remove(filepath.Join(dir, "devices.deny")))
	must.NoError(t, os.Remove(filepath.Join(dir, "devices.allow")))
	must.NoError(t, g.remove())
	_, err = os.Stat(dir)
	must.True(t, os.IsNotExist(err))
}

// TestDeviceCgroupV2 checks that on v2 the launch is left alone and the
// task's own cgroup gets the full rule set after launch.
func TestDeviceCgroupV2(t *testing.T) {
	root, proc := t.TempDir(), t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory"), 0o644))
	must.NoError(t, os.MkdirAll(filepath.Join(proc, "7"), 0o755))
	must.NoError(t, os.WriteFile(filepath.Join(proc, "7", "cgroup"), []byte("0::/nomad.slice/a1.train.scope\n"), 0o644))
	g, err := newDeviceCgroup(root, []*drivers.DeviceConfig{{TaskPath: "/dev/nvidia0", HostPath: "/dev/zero", Permissions: "rwm"}})
	must.NoError(t, err)
	var gotDir string
	var gotRules []string
	g.setV2 = func(dir string, rules []*ldevices.Rule) error {
		gotDir = dir
		for _, r := range rules {
			gotRules = append(gotRules, r.CgroupString())
		}
		return nil
	}
	res := &drivers.Resources{}
	out, err := g.beforeLaunch("x", res)
	must.NoError(t, err)
	must.True(t, out == res)
	must.NoError(t, g.afterLaunch(proc, 7))
	must.Eq(t, filepath.Join(root, "nomad.slice", "a1.train.scope"), gotDir)
	must.Eq(t, "c 1:5 rwm", gotRules[len(gotRules)-1])
	must.NoError(t, g.remove())
}

// TestDeviceRulesV2Compile runs the rule set through what runc's cgroup
// v2 manager does with it before loading the eBPF filter (the devices
// emulator, then the filter compiler): it must compile, deny by default
// and allow exactly the defaults and the reserved GPU nodes, with their
// permissions. The rules come as DeviceFromPath makes them (Allow
// false); without the allowance the compile fails, as it failed on a
// real cgroup v2 GPU host.
func TestDeviceRulesV2Compile(t *testing.T) {
	gpu := func(major, minor int64) ldevices.Rule {
		return ldevices.Rule{Type: ldevices.CharDevice, Major: major, Minor: minor, Permissions: "rwm"}
	}
	rules := deviceRules([]ldevices.Rule{gpu(195, 0), gpu(195, 255), gpu(238, 0)})
	_, _, err := devicefilter.DeviceFilter(rules)
	must.NoError(t, err)

	emu := new(devemu.Emulator)
	for _, r := range rules {
		must.NoError(t, emu.Apply(*r))
	}
	must.False(t, emu.IsBlacklist(), must.Sprint("devices not listed are denied"))
	clean, err := emu.Rules()
	must.NoError(t, err)
	var allowed []string
	for _, r := range clean {
		must.True(t, r.Allow, must.Sprintf("only allowances in an allow-list: %s", r.CgroupString()))
		allowed = append(allowed, r.CgroupString())
	}
	for _, want := range []string{"c 195:0 rwm", "c 195:255 rwm", "c 238:0 rwm", "c 1:3 rwm"} {
		must.SliceContains(t, allowed, want)
	}
	must.SliceNotContains(t, allowed, "c 195:1 rwm", must.Sprint("another GPU"))
	must.SliceNotContains(t, allowed, "c 195:* rwm")
}

func TestNoDevicesNoCgroup(t *testing.T) {
	g, err := newDeviceCgroup(t.TempDir(), nil)
	must.NoError(t, err)
	must.Nil(t, g)
	_, err = newDeviceCgroup(t.TempDir(), []*drivers.DeviceConfig{{HostPath: "/nonexistent/nvidia9", Permissions: "rwm"}})
	must.ErrorContains(t, err, "reserved device /nonexistent/nvidia9")
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must.NoError(t, err)
	return strings.TrimSpace(string(b))
}
