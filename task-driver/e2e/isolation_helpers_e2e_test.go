//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
)

// pythonInChroot is the interpreter isolated tasks run: Debian's, whose
// standard library leanChroot links in (the python3 on PATH may live under
// /root, which a task user cannot read).
const pythonInChroot = "/usr/bin/python3"

// leanChroot is a client chroot_env with what the e2e jobs need, instead
// of Nomad's default that hard-links all of /usr (150,000 files here) into
// every task's chroot: the shell and coreutils, the C libraries, the user
// database (the isolating executor resolves the task's user inside the
// chroot), Python with its standard library, and the extra host paths
// given (the toy trainer's directory, the jobspecs), at the same paths.
func leanChroot(extra ...string) map[string]string {
	env := map[string]string{
		"/bin": "/bin", "/usr/bin": "/usr/bin", "/lib64": "/lib64",
		"/lib/x86_64-linux-gnu": "/lib/x86_64-linux-gnu",
		"/etc/passwd":           "/etc/passwd", "/etc/group": "/etc/group", "/etc/ld.so.cache": "/etc/ld.so.cache",
	}
	stdlib, _ := filepath.Glob("/usr/lib/python3.[0-9]*")
	extra = append(extra, stdlib...)
	for _, p := range extra {
		env[p] = p
	}
	return env
}

// openToAll makes dir and its parents up to the system temp dir
// traversable (0755) and dir's files readable, so a task user (nobody)
// can run what a test built there. The client's chroot copies these
// permissions.
func openToAll(t testing.TB, dir string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	for d := filepath.Clean(dir); d != tmp && d != "/" && d != "."; d = filepath.Dir(d) {
		must.NoError(t, os.Chmod(d, 0o755))
	}
}

// hasPython says whether the chroot's interpreter exists on this host.
func hasPython() bool {
	_, err := os.Stat(pythonInChroot)
	return err == nil
}
