package dev

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"
)

func TestIsolationFor(t *testing.T) {
	cases := map[string]struct {
		goos     string
		euid     int
		chroot   bool
		contains []string
	}{
		"root on linux: chroot as nobody": {"linux", 0, true, []string{`isolation       = "chroot"`, `default_user    = "nobody"`}},
		"not root: none as the user":      {"linux", 1000, false, []string{`isolation       = "none"`}},
		"root elsewhere: none":            {"darwin", 0, false, []string{`isolation       = "none"`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			iso, err := isolationFor(tc.goos, tc.euid)
			must.NoError(t, err)
			must.Eq(t, tc.chroot, iso.chroot)
			lines := iso.driverLines()
			for _, c := range tc.contains {
				must.StrContains(t, lines, c)
			}
			must.StrNotContains(t, lines, "allow_root", must.Sprint("root is never allowed"))
			if !tc.chroot {
				must.NotEq(t, "", iso.user)
				must.StrContains(t, iso.describe(), "NOT isolated")
			}
		})
	}
}

func TestDriverConfigNeverAllowsRoot(t *testing.T) {
	for _, iso := range []isolation{{chroot: true}, {user: "alice"}} {
		cfg, err := driverConfig(Options{Dir: t.TempDir()}, iso)
		must.NoError(t, err)
		must.StrContains(t, cfg, "checkpoint_root")
		must.StrNotContains(t, cfg, "allow_root")
	}
}

func TestParseLdd(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "libz.so.1.2.13")
	must.NoError(t, os.WriteFile(real, nil, 0o644))
	link := filepath.Join(dir, "libz.so.1")
	must.NoError(t, os.Symlink("libz.so.1.2.13", link))
	loader := filepath.Join(dir, "ld.so")
	must.NoError(t, os.WriteFile(loader, nil, 0o755))
	out := strings.Join([]string{
		"/usr/bin/python3.11:",
		"\tlinux-vdso.so.1 (0x00007f3f32613000)",
		"\tlibz.so.1 => " + link + " (0x00007f3f32503000)",
		"\tlibgone.so.2 => not found",
		"\t" + loader + " (0x00007f3f32615000)",
	}, "\n")
	must.Eq(t, map[string]string{real: link, loader: loader}, parseLdd([]byte(out)))
}

func TestChrootEnvIsLean(t *testing.T) {
	env := chrootEnv("/repo/jobspecs")
	must.Eq(t, "/repo/jobspecs", env["/repo/jobspecs"])
	for _, p := range []string{"/usr/bin", "/etc/passwd", "/etc/group"} {
		must.MapContainsKey(t, env, p)
	}
	must.MapNotContainsKey(t, env, "/usr", must.Sprint("Nomad's default links all of /usr"))
}

func TestTraversableByAll(t *testing.T) {
	open := t.TempDir()
	must.NoError(t, os.Chmod(open, 0o755))
	closed := filepath.Join(open, "closed")
	must.NoError(t, os.Mkdir(closed, 0o700))
	must.NoError(t, os.Chmod(closed, 0o700))
	inner := filepath.Join(closed, "jobspecs")
	must.NoError(t, os.Mkdir(inner, 0o755))
	must.Eq(t, closed, traversableByAll(inner))
	must.Eq(t, filepath.Join(open, "missing"), traversableByAll(filepath.Join(open, "missing")))
}

// As root, deviceInventory makes a node per inventory device and writes
// the inventory copy with device_dir; an inventory with its own
// device_dir is used as it is.
func TestDeviceInventory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root: this test runs as root only")
	}
	dir := t.TempDir()
	src := filepath.Join(t.TempDir(), "node.hcl")
	must.NoError(t, os.WriteFile(src, []byte("seed = \"t\"\ngpu \"H200\" {\n  count = 2\n  memory_mib = 1024\n}\nnpu \"Ascend910B\" {\n  count = 1\n  memory_mib = 1024\n}\n"), 0o644))
	got, err := deviceInventory(context.Background(), dir, src)
	must.NoError(t, err)
	must.Eq(t, filepath.Join(dir, "inventory", "node.hcl"), got)
	data, err := os.ReadFile(got)
	must.NoError(t, err)
	must.StrContains(t, string(data), `device_dir = "`+filepath.Join(dir, deviceNodeDir)+`"`)
	for name, want := range map[string][2]uint32{"nvidia0": {195, 0}, "nvidia1": {195, 1}, "nvidiactl": {195, 255}, "davinci0": {240, 0}} {
		var st unix.Stat_t
		must.NoError(t, unix.Stat(filepath.Join(dir, deviceNodeDir, name), &st))
		must.Eq(t, uint32(unix.S_IFCHR), st.Mode&unix.S_IFMT, must.Sprint(name))
		must.Eq(t, want, [2]uint32{unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev))}, must.Sprint(name))
		must.Eq(t, uint32(0o666), st.Mode&0o777, must.Sprint(name))
	}
	own := filepath.Join(t.TempDir(), "own.hcl")
	must.NoError(t, os.WriteFile(own, []byte("device_dir = \"/dev\"\ngpu \"H200\" {\n  count = 1\n  memory_mib = 1024\n}\n"), 0o644))
	got, err = deviceInventory(context.Background(), t.TempDir(), own)
	must.NoError(t, err)
	must.Eq(t, own, got)
}

func TestAddChainFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(dir, "dash"), nil, 0o755))
	must.NoError(t, os.Symlink("dash", filepath.Join(dir, "sh")))
	must.NoError(t, os.Symlink(filepath.Join(dir, "sh"), filepath.Join(dir, "abs")))
	env := map[string]string{}
	addChain(env, filepath.Join(dir, "abs"))
	addChain(env, filepath.Join(dir, "missing"))
	want := map[string]string{}
	for _, n := range []string{"abs", "sh", "dash"} {
		want[filepath.Join(dir, n)] = filepath.Join(dir, n)
	}
	must.Eq(t, want, env)
}
