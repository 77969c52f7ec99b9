package ckpt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/nomad/structs"
	"github.com/hashicorp/nomad/plugins/drivers"
	"github.com/shoenig/test/must"
)

const testPid = 4242

// fakeHost is a temp dir laid out like a cgroup filesystem and /proc.
type fakeHost struct {
	root, proc string
}

// newFakeHost writes /proc/<testPid>/cgroup and the given control files
// (paths relative to the cgroup root, with their content).
func newFakeHost(t *testing.T, procCgroup string, files map[string]string) fakeHost {
	t.Helper()
	h := fakeHost{root: t.TempDir(), proc: t.TempDir()}
	writeFile(t, filepath.Join(h.proc, "4242", "cgroup"), procCgroup)
	for p, content := range files {
		writeFile(t, filepath.Join(h.root, p), content)
	}
	return h
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	must.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// limiter returns a cgroupLimiter on the fake host whose mkdir creates the
// control files the kernel would.
func (h fakeHost) limiter() *cgroupLimiter {
	c := newCgroupLimiter(h.root, h.proc, "a1", "train")
	c.mkdir = func(dir string) error {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cgroup.procs", "memory.limit_in_bytes", "cpu.shares"} {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				return err
			}
		}
		return os.WriteFile(filepath.Join(dir, "memory.oom_control"), []byte("under_oom 0\noom_kill 0\n"), 0o644)
	}
	return c
}

func (h fakeHost) read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.root, p))
	must.NoError(t, err)
	return string(b)
}

const v1Proc = "9:name=systemd:/\n4:memory:/sandbox\n1:cpu,cpuacct:/sandbox\n0::/\n"

func v1Files(extra map[string]string) map[string]string {
	files := map[string]string{
		"memory/sandbox/cgroup.procs": "", "memory/sandbox/memory.limit_in_bytes": "",
		"cpu/sandbox/cgroup.procs": "", "cpu/sandbox/cpu.shares": "",
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

func TestCgroupLimiterApply(t *testing.T) {
	const child = "allot-ckpt-a1-train"
	tests := map[string]struct {
		proc  string
		files map[string]string
		lim   limits
		want  map[string]string // file → content after Apply
		gone  []string          // files that must not exist
	}{
		"v1 creates a child beneath the current cgroups": {
			proc: v1Proc, files: v1Files(nil), lim: limits{memoryBytes: 64 << 20, cpuShares: 500},
			want: map[string]string{
				"memory/sandbox/" + child + "/memory.limit_in_bytes": "67108864",
				"memory/sandbox/" + child + "/cgroup.procs":          "4242",
				"cpu/sandbox/" + child + "/cpu.shares":               "500",
				"cpu/sandbox/" + child + "/cgroup.procs":             "4242",
				"memory/sandbox/memory.limit_in_bytes":               "",
			},
		},
		"v1 after recovery does not nest again": {
			proc:  "4:memory:/sandbox/" + child + "\n1:cpu:/sandbox/" + child + "\n",
			files: v1Files(map[string]string{"memory/sandbox/" + child + "/memory.limit_in_bytes": "1", "memory/sandbox/" + child + "/cgroup.procs": "", "cpu/sandbox/" + child + "/cpu.shares": "", "cpu/sandbox/" + child + "/cgroup.procs": ""}),
			lim:   limits{memoryBytes: 1 << 20, cpuShares: 100},
			want: map[string]string{
				"memory/sandbox/" + child + "/memory.limit_in_bytes": "1048576",
				"cpu/sandbox/" + child + "/cpu.shares":               "100",
			},
			gone: []string{"memory/sandbox/" + child + "/" + child},
		},
		"v1 memory only touches no cpu cgroup": {
			proc: v1Proc, files: v1Files(nil), lim: limits{memoryBytes: 2 << 20},
			want: map[string]string{"memory/sandbox/" + child + "/memory.limit_in_bytes": "2097152"},
			gone: []string{"cpu/sandbox/" + child},
		},
		"v2 writes into the task's own scope": {
			proc: "0::/nomad.slice/t.scope\n",
			files: map[string]string{
				"cgroup.controllers": "cpu memory", "nomad.slice/t.scope/memory.max": "max",
				"nomad.slice/t.scope/memory.swap.max": "max", "nomad.slice/t.scope/cpu.weight": "100",
			},
			lim: limits{memoryBytes: 64 << 20, cpuShares: 1024},
			want: map[string]string{
				"nomad.slice/t.scope/memory.max": "67108864", "nomad.slice/t.scope/memory.swap.max": "0",
				"nomad.slice/t.scope/cpu.weight": "39",
			},
		},
		"v2 without swap accounting": {
			proc: "0::/t.scope\n",
			files: map[string]string{
				"cgroup.controllers": "cpu memory", "t.scope/memory.max": "max", "t.scope/cpu.weight": "100",
			},
			lim:  limits{memoryBytes: 1 << 20, cpuShares: 2},
			want: map[string]string{"t.scope/memory.max": "1048576", "t.scope/cpu.weight": "1"},
			gone: []string{"t.scope/memory.swap.max"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newFakeHost(t, tc.proc, tc.files)
			must.NoError(t, h.limiter().Apply(testPid, tc.lim))
			for p, want := range tc.want {
				must.Eq(t, want, h.read(t, p), must.Sprint(p))
			}
			for _, p := range tc.gone {
				_, err := os.Stat(filepath.Join(h.root, p))
				must.True(t, errors.Is(err, os.ErrNotExist), must.Sprint(p))
			}
		})
	}
}

func TestCgroupLimiterApplyErrors(t *testing.T) {
	tests := map[string]struct {
		proc    string
		files   map[string]string
		noProc  bool
		mkdirRO bool
		want    string
	}{
		"no proc entry":        {noProc: true, want: "reading the task's cgroups"},
		"malformed proc entry": {proc: "garbage\n", want: "malformed line"},
		"v2 task in the root":  {proc: "0::/\n", files: map[string]string{"cgroup.controllers": ""}, want: "not in a cgroup of its own"},
		"v2 memory controller off": {
			proc: "0::/t.scope\n", files: map[string]string{"cgroup.controllers": "cpu", "t.scope/cpu.weight": ""},
			want: "memory.max",
		},
		"v1 no memory hierarchy": {proc: "1:cpu:/\n", want: "no memory hierarchy"},
		"v1 cannot create the child": {
			proc: v1Proc, files: v1Files(nil), mkdirRO: true, want: "creating",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newFakeHost(t, tc.proc, tc.files)
			if tc.noProc {
				must.NoError(t, os.RemoveAll(filepath.Join(h.proc, "4242")))
			}
			c := h.limiter()
			if tc.mkdirRO {
				c.mkdir = func(string) error { return os.ErrPermission }
			}
			err := c.Apply(testPid, limits{memoryBytes: 1 << 20, cpuShares: 100})
			must.ErrorContains(t, err, tc.want)
		})
	}
	t.Run("invalid pid", func(t *testing.T) {
		must.ErrorContains(t, newFakeHost(t, v1Proc, nil).limiter().Apply(0, limits{}), "invalid pid")
	})
}

func TestCgroupLimiterOOMAndRemove(t *testing.T) {
	const child = "allot-ckpt-a1-train"
	h := newFakeHost(t, v1Proc, v1Files(nil))
	c := h.limiter()
	must.NoError(t, c.Apply(testPid, limits{memoryBytes: 1 << 20, cpuShares: 100}))
	must.False(t, c.OOMKilled())
	writeFile(t, filepath.Join(h.root, "memory/sandbox", child, "memory.oom_control"), "under_oom 0\noom_kill 1\n")
	must.True(t, c.OOMKilled())

	// A non-empty cgroup cannot be removed; the error names it and a later
	// Remove tries again.
	must.ErrorContains(t, c.Remove(), child)
	// The kernel removes control files with the directory; the fake cannot.
	for _, ctl := range []string{"memory", "cpu"} {
		dir := filepath.Join(h.root, ctl, "sandbox", child)
		entries, err := os.ReadDir(dir)
		must.NoError(t, err)
		for _, e := range entries {
			must.NoError(t, os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	must.NoError(t, c.Remove())
	for _, ctl := range []string{"memory", "cpu"} {
		_, err := os.Stat(filepath.Join(h.root, ctl, "sandbox", child))
		must.True(t, errors.Is(err, os.ErrNotExist), must.Sprint(ctl))
	}
	must.Eq(t, "", h.read(t, "memory/sandbox/memory.limit_in_bytes"))
}

func TestCgroupLimiterOOMv2(t *testing.T) {
	h := newFakeHost(t, "0::/t.scope\n", map[string]string{
		"cgroup.controllers": "memory", "t.scope/memory.max": "", "t.scope/memory.events": "oom 1\noom_kill 2\n",
	})
	c := h.limiter()
	must.False(t, c.OOMKilled()) // nothing applied yet
	must.NoError(t, c.Apply(testPid, limits{memoryBytes: 1 << 20}))
	must.True(t, c.OOMKilled())
	must.NoError(t, c.Remove())
}

func TestLimitsFor(t *testing.T) {
	res := func(mem, max, cpu int64) *drivers.Resources {
		return &drivers.Resources{NomadResources: &structs.AllocatedTaskResources{
			Memory: structs.AllocatedMemoryResources{MemoryMB: mem, MemoryMaxMB: max},
			Cpu:    structs.AllocatedCpuResources{CpuShares: cpu},
		}}
	}
	tests := map[string]struct {
		in   *drivers.Resources
		want limits
	}{
		"nil":            {in: nil, want: limits{}},
		"memory":         {in: res(64, 0, 100), want: limits{memoryBytes: 64 << 20, cpuShares: 100}},
		"memory_max":     {in: res(64, 256, 100), want: limits{memoryBytes: 256 << 20, cpuShares: 100}},
		"no nomad block": {in: &drivers.Resources{}, want: limits{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { must.Eq(t, tc.want, limitsFor(tc.in)) })
	}
}

func TestSharesToWeight(t *testing.T) {
	for shares, want := range map[int64]int64{0: 1, 2: 1, 1024: 39, 262144: 10000, 1 << 30: 10000} {
		must.Eq(t, want, sharesToWeight(shares), must.Sprint(shares))
	}
}

func TestCgroupName(t *testing.T) {
	must.Eq(t, "allot-ckpt-a1-my_task_x", cgroupName("a1", "my task/x"))
	must.False(t, strings.Contains(cgroupName("a", "../.."), "/"))
}
