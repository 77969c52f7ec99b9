package nomadagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"
)

// TestSweep_KillsProcessesReferringToDir starts processes that refer to a
// directory the ways Nomad's leftovers do (working dir, argument,
// environment) and one that does not; Sweep must kill exactly the first.
func TestSweep_KillsProcessesReferringToDir(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	byCwd := startSleep(t, dir, nil, "sleep")
	byArg := startSleep(t, other, nil, filepath.Join(dir, "executor"))
	byEnv := startSleep(t, other, []string{"NOMAD_TASK_DIR=" + dir}, "sleep")
	bystander := startSleep(t, other, nil, "sleep")

	killed, err := Sweep(dir)
	must.NoError(t, err)
	must.SliceContainsAll(t, killed, []int{byCwd.Process.Pid, byArg.Process.Pid, byEnv.Process.Pid})
	for _, c := range []*exec.Cmd{byCwd, byArg, byEnv} {
		must.Error(t, c.Wait())
	}
	must.NoError(t, bystander.Process.Signal(syscall.Signal(0)), must.Sprint("bystander was killed"))
}

// startSleep runs `sleep 600` with the given working dir, extra environment
// and argv[0] (so its command line can name a path).
func startSleep(t *testing.T, cwd string, env []string, argv0 string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/bash", "-c", `exec -a "$0" sleep 600`, argv0)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), env...)
	must.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}
