package dev

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
)

// isolation is how the dev node's ckpt driver runs tasks.
type isolation struct {
	// chroot: the driver's default, Nomad's isolating executor (chroot,
	// PID/IPC namespaces, device cgroup) with tasks as nobody. It needs
	// the plugin, and so dev up, to run as root on Linux.
	chroot bool
	// user runs tasks without isolation: the user who runs dev up.
	user string
}

// isolationFor decides how tasks run when dev up runs as euid on goos:
// isolated as root on Linux, else unisolated as the invoking user, who is
// then not root.
func isolationFor(goos string, euid int) (isolation, error) {
	if goos == "linux" && euid == 0 {
		return isolation{chroot: true}, nil
	}
	me, err := user.Current()
	if err != nil {
		return isolation{}, fmt.Errorf("dev node user: %w", err)
	}
	return isolation{user: me.Username}, nil
}

// currentIsolation is isolationFor this process.
func currentIsolation() (isolation, error) { return isolationFor(runtime.GOOS, os.Geteuid()) }

// driverLines are the ckpt plugin config lines that select iso.
func (iso isolation) driverLines() string {
	if iso.chroot {
		return "isolation       = \"chroot\"\ndefault_user    = \"nobody\""
	}
	return fmt.Sprintf("isolation       = \"none\"\ndefault_user    = %q", iso.user)
}

// describe is the line dev up prints about how tasks run.
func (iso isolation) describe() string {
	if iso.chroot {
		return "    ckpt tasks: isolated (chroot, own PID namespace, only their reserved devices) as nobody"
	}
	return fmt.Sprintf("    ckpt tasks: NOT isolated (isolation = \"none\") and run as %s: run dev up as root to isolate them as nobody", iso.user)
}

// chrootPrograms are the programs whose libraries the dev chroot carries:
// the shells and tools the example jobs and a person trying things use,
// and the Python the toy trainer runs on. Everything in /usr/bin is
// there, but other programs may lack libraries.
var chrootPrograms = []string{"sh", "bash", "dash", "sleep", "cat", "echo", "ls", "id", "env", "true", "date", "python3"}

// chrootEnv is the dev client's chroot_env: /usr/bin, the C libraries
// those programs and Python's extension modules need (found with ldd;
// the whole library directory when ldd cannot tell), Python's standard
// library, the user and group files the executor resolves users with,
// and the example jobs' directory at its host path, so
// script_dir=$PWD/jobspecs means the same inside. Far smaller than
// Nomad's default (all of /usr), so tasks start fast.
func chrootEnv(jobspecs string) map[string]string {
	env := map[string]string{"/usr/bin": "/usr/bin", "/etc/passwd": "/etc/passwd", "/etc/group": "/etc/group",
		"/etc/ld.so.cache": "/etc/ld.so.cache"}
	stdlib, _ := filepath.Glob("/usr/lib/python3.[0-9]*")
	for _, p := range stdlib {
		env[p] = p
	}
	if jobspecs != "" {
		env[jobspecs] = jobspecs
	}
	// Jobs name /bin/sh and /bin/sleep; /bin is often a link to /usr/bin,
	// which the chroot does not copy: link these programs there too.
	for _, p := range chrootPrograms {
		addChain(env, filepath.Join("/bin", p))
	}
	libs, err := libraries(stdlib)
	if err != nil {
		for _, d := range []string{"/lib64", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu"} {
			env[d] = d
		}
		return env
	}
	for host, dest := range libs {
		env[host] = dest
	}
	return env
}

// addChain adds path to env at the same place, and every symlink hop
// from it (sh → dash), so the link resolves inside the chroot: the client
// links a symlink itself, not what it points at.
func addChain(env map[string]string, path string) {
	for i := 0; i < 8; i++ {
		fi, err := os.Lstat(path)
		if err != nil {
			return
		}
		env[path] = path
		if fi.Mode()&os.ModeSymlink == 0 {
			return
		}
		target, err := os.Readlink(path)
		if err != nil {
			return
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
}

// libraries maps the shared libraries of chrootPrograms and of the Python
// extension modules under stdlib (their real files) to the paths the
// dynamic loader looks for (as ldd prints them).
func libraries(stdlib []string) (map[string]string, error) {
	// The chroot's copies, not whatever comes first in PATH.
	var files []string
	for _, p := range chrootPrograms {
		for _, dir := range []string{"/usr/bin", "/bin"} {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				files = append(files, filepath.Join(dir, p))
				break
			}
		}
	}
	for _, dir := range stdlib {
		mods, _ := filepath.Glob(filepath.Join(dir, "lib-dynload", "*.so"))
		files = append(files, mods...)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no programs found")
	}
	out, err := exec.Command("ldd", files...).Output()
	if err != nil && len(out) == 0 {
		return nil, fmt.Errorf("ldd: %w", err)
	}
	return parseLdd(out), nil
}

// parseLdd reads ldd's output: "name => /path (addr)" and "/path (addr)"
// lines give a library's path; its real file (symlinks resolved) is
// linked into the chroot under that path.
func parseLdd(out []byte) map[string]string {
	libs := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var p string
		switch {
		case len(f) >= 3 && f[1] == "=>":
			p = f[2]
		case len(f) >= 1 && filepath.IsAbs(f[0]) && !strings.HasSuffix(f[0], ":"):
			p = f[0]
		}
		if !filepath.IsAbs(p) {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			libs[real] = p
		}
	}
	return libs
}

// traversableByAll reports the first directory above path (path
// included) that other users cannot enter, or "" when there is none.
// The client copies the host's directory modes into the chroot, so a
// task user cannot reach a file below such a directory.
func traversableByAll(path string) string {
	for d := filepath.Clean(path); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}
