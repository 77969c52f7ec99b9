package ckpt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/nomad/drivers/shared/executor"
	"github.com/hashicorp/nomad/plugins/drivers"
	"github.com/shoenig/test/must"
)

// TestAudit1_ExecCommandIsolation checks what the executor is asked for:
// isolated tasks get the reserved devices, their volume mounts plus their
// checkpoint dir at the same path, private PID/IPC namespaces, no
// capabilities and the executor's own cgroup limits; isolation = "none"
// gets the universal executor as before.
func TestAudit1_ExecCommandIsolation(t *testing.T) {
	gpu := &drivers.DeviceConfig{TaskPath: "/dev/nvidia1", HostPath: "/tmp/fake/nvidia1", Permissions: "rwm"}
	vol := &drivers.MountConfig{TaskPath: "/data", HostPath: "/srv/data", Readonly: true}
	cfg := &drivers.TaskConfig{ID: "t1", Name: "train", AllocDir: "/alloc", Devices: []*drivers.DeviceConfig{gpu},
		Mounts: []*drivers.MountConfig{vol}, Env: map[string]string{"A": "1"}}
	tc := &TaskConfig{Command: "/bin/train", Args: []string{"-x"}}
	dir := "/ck/ml/job/g/0/train"

	tests := map[string]struct {
		isolation string
		check     func(t *testing.T, c *executor.ExecCommand)
	}{
		"chroot": {isolation: IsolationChroot, check: func(t *testing.T, c *executor.ExecCommand) {
			must.Eq(t, []*drivers.DeviceConfig{gpu}, c.Devices)
			must.Eq(t, []*drivers.MountConfig{vol, {TaskPath: dir, HostPath: dir}}, c.Mounts)
			must.Eq(t, executor.IsolationModePrivate, c.ModePID)
			must.Eq(t, executor.IsolationModePrivate, c.ModeIPC)
			must.SliceEmpty(t, c.Capabilities)
			must.True(t, c.ResourceLimits)
		}},
		"none": {isolation: IsolationNone, check: func(t *testing.T, c *executor.ExecCommand) {
			must.SliceEmpty(t, c.Devices)
			must.SliceEmpty(t, c.Mounts)
			must.Eq(t, "", c.ModePID)
		}},
	}
	for name, tc2 := range tests {
		t.Run(name, func(t *testing.T) {
			d := &Driver{settings: settings{isolation: tc2.isolation, noCgroups: true}}
			c := d.execCommand(cfg, tc, "svc", dir)
			must.Eq(t, "svc", c.User)
			must.Eq(t, "/bin/train", c.Cmd)
			must.Eq(t, []string{"-x"}, c.Args)
			tc2.check(t, c)
		})
	}
	// The task's own mounts are not changed by adding the checkpoint dir.
	must.Len(t, 1, cfg.Mounts)
}

func TestCapabilitiesFollowIsolation(t *testing.T) {
	iso := capabilitiesFor(settings{isolation: IsolationChroot})
	must.Eq(t, drivers.FSIsolationChroot, iso.FSIsolation)
	must.Eq(t, drivers.MountConfigSupportAll, iso.MountConfigs)
	none := capabilitiesFor(settings{isolation: IsolationNone})
	must.Eq(t, drivers.FSIsolationNone, none.FSIsolation)
	must.Eq(t, drivers.MountConfigSupportNone, none.MountConfigs)
	must.Eq(t, drivers.FSIsolationNone, capabilities.FSIsolation, must.Sprint("the shared default is not modified"))
}

func TestIsolationUnsupported(t *testing.T) {
	tests := map[string]struct {
		goos string
		euid int
		want string
	}{
		"linux as root": {goos: "linux", euid: 0, want: ""},
		"not root":      {goos: "linux", euid: 1000, want: `isolation = "chroot" needs the plugin to run as root`},
		"not linux":     {goos: "darwin", euid: 0, want: `isolation = "chroot" needs Linux, this is darwin`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			must.Eq(t, tc.want, isolationUnsupported(tc.goos, tc.euid))
		})
	}
}

// TestObserveIsolatedLimits: for an isolated task the driver only finds
// the executor's memory cgroup (v1 hierarchy or v2 unified) to read its
// OOM counter, and writes nothing.
func TestObserveIsolatedLimits(t *testing.T) {
	tests := map[string]struct {
		v2       bool
		procLine string
		memDir   string // relative to the cgroup root
		oomFile  string
	}{
		"v1": {procLine: "4:memory:/nomad/abc\n3:cpu,cpuacct:/nomad/abc\n", memDir: "memory/nomad/abc", oomFile: "memory.oom_control"},
		"v2": {v2: true, procLine: "0::/nomad.slice/a.train.scope\n", memDir: "nomad.slice/a.train.scope", oomFile: "memory.events"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root, proc := t.TempDir(), t.TempDir()
			if tc.v2 {
				must.NoError(t, os.WriteFile(filepath.Join(root, "cgroup.controllers"), nil, 0o644))
			}
			must.NoError(t, os.MkdirAll(filepath.Join(proc, "9"), 0o755))
			must.NoError(t, os.WriteFile(filepath.Join(proc, "9", "cgroup"), []byte(tc.procLine), 0o644))
			dir := filepath.Join(root, tc.memDir)
			must.NoError(t, os.MkdirAll(dir, 0o755))
			c := newCgroupLimiter(root, proc, "a", "train")
			must.NoError(t, c.observe(9))
			o := observer{c}
			must.NoError(t, o.Apply(9, limits{memoryBytes: 1}))
			must.False(t, o.OOMKilled())
			must.NoError(t, os.WriteFile(filepath.Join(dir, tc.oomFile), []byte("oom 1\noom_kill 1\n"), 0o644))
			must.True(t, o.OOMKilled())
			must.NoError(t, o.Remove())
			entries, err := os.ReadDir(dir)
			must.NoError(t, err)
			must.Len(t, 1, entries, must.Sprint("nothing written but the test's own counter file"))
		})
	}
}
