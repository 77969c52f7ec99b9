//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"

	"github.com/allot-sh/allot/device-plugin/inventory"
	"github.com/allot-sh/allot/internal/testcluster"
)

// nvidiaMajor is the NVIDIA driver's character device major number.
const nvidiaMajor = 195

// isoSuite is the cluster of the isolation scenarios: one client with
// four inventory GPUs whose device nodes the test made, and the ckpt
// driver with its defaults (isolation = "chroot", default_user = "nobody")
// plus namespace_users.
type isoSuite struct {
	c       *testcluster.Cluster
	devDir  string
	gpuByID map[string]int // inventory GPU ID → minor number
}

// TestE2E_Isolation runs audit #1's node-side scenarios on a real cluster:
// tasks run as the user the rules allow, and see only their own GPUs.
func TestE2E_Isolation(t *testing.T) {
	s := &isoSuite{devDir: t.TempDir()}
	inv := s.makeDevices(t)
	root := t.TempDir()
	driverCfg := fmt.Sprintf(`checkpoint_root = %q
namespace_users {
  "ml-prod"     = ["daemon"]
  "ml-research" = ["bin"]
}`, root)
	// A stray node outside /dev, of a GPU no task reserves: it reaches
	// every chroot as a hard link, so only the device cgroup stands
	// between a task and it.
	chroot := leanChroot()
	chroot[filepath.Join(s.devDir, "stray7")] = "/opt/stray/nvidia7"
	s.c = testcluster.New(t, testcluster.Options{
		Plugins: []string{"nomad-device-accel", "nomad-driver-ckpt"},
		Clients: []testcluster.ClientSpec{{
			Name: "iso-1",
			PluginConfig: map[string]string{
				"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv),
				"nomad-driver-ckpt":  driverCfg,
			},
			ChrootEnv: chroot,
			Ready:     testcluster.HasDevices("nvidia/gpu", 4),
		}},
	})
	for _, ns := range []string{"ml-prod", "ml-research"} {
		_, err := s.c.API.Namespaces().Register(&api.Namespace{Name: ns}, nil)
		must.NoError(t, err)
	}
	t.Run("users: no user runs as nobody, a listed user runs, root and another namespace's user are refused", s.users)
	t.Run("devices: a 1-GPU task opens only its node, a 2-GPU task sees exactly its 2", s.devices)
}

// makeDevices creates nvidia0-3, nvidiactl and a stray node (minor 7)
// with the NVIDIA major in the suite's dir, and an inventory of four GPUs
// that points at them; it returns the inventory's path.
func (s *isoSuite) makeDevices(t *testing.T) string {
	nodes := map[string]uint32{"nvidia0": 0, "nvidia1": 1, "nvidia2": 2, "nvidia3": 3, "nvidiactl": 255, "stray7": 7}
	for name, minor := range nodes {
		p := filepath.Join(s.devDir, name)
		must.NoError(t, unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(nvidiaMajor, minor))))
		must.NoError(t, os.Chmod(p, 0o666)) // mknod honours the umask
	}
	path := filepath.Join(t.TempDir(), "iso.hcl")
	src := fmt.Sprintf("seed = \"iso\"\ndevice_dir = %q\ngpu \"H200\" {\n  count = 4\n  memory_mib = 1024\n}\n", s.devDir)
	must.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	devs, err := inventory.New(path).Fingerprint(context.Background())
	must.NoError(t, err)
	s.gpuByID = map[string]int{}
	for _, d := range devs {
		s.gpuByID[d.ID] = d.Index
	}
	return path
}

// probeJob runs script as a ckpt task in namespace ns, as user (none when
// empty), with gpus GPUs; restarts and reschedules are off.
func probeJob(id, ns, user string, gpus int, script string) string {
	userLine, device := "", ""
	if user != "" {
		userLine = fmt.Sprintf("user = %q", user)
	}
	if gpus > 0 {
		device = fmt.Sprintf("device \"nvidia/gpu\" {\n          count = %d\n        }", gpus)
	}
	return fmt.Sprintf(`
job %q {
  namespace = %q
  type      = "batch"
  reschedule {
    attempts  = 0
    unlimited = false
  }
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "train" {
      driver = "ckpt"
      %s
      config {
        command = "/bin/sh"
        args    = ["-c", %q]
      }
      resources {
        cpu    = 50
        memory = 32
        %s
      }
    }
  }
}`, id, ns, userLine, script, device)
}

// users: the user rules on a real client.
func (s *isoSuite) users(t *testing.T) {
	const idScript = `echo "uid=$(id -u) user=$(id -un)"; exec sleep 300`
	nobody, _ := s.c.RegisterHCL("nouser.nomad.hcl", probeJob("nouser", "ml-research", "", 0, idScript))
	listed, _ := s.c.RegisterHCL("listed.nomad.hcl", probeJob("listed", "ml-research", "bin", 0, idScript))
	root, _ := s.c.RegisterHCL("root.nomad.hcl", probeJob("asroot", "ml-research", "root", 0, idScript))
	other, _ := s.c.RegisterHCL("other.nomad.hcl", probeJob("asother", "ml-research", "daemon", 0, idScript))

	a := s.c.WaitForAlloc("ml-research", *nobody.ID, 90*time.Second, testcluster.ClientStatus(api.AllocClientStatusRunning))
	waitLog(t, s.c, a.ID, `uid=65534 user=nobody\n`, time.Minute)
	a = s.c.WaitForAlloc("ml-research", *listed.ID, 90*time.Second, testcluster.ClientStatus(api.AllocClientStatusRunning))
	waitLog(t, s.c, a.ID, `uid=2 user=bin\n`, time.Minute)

	refused := map[string]string{
		*root.ID:  `user "root" has uid 0 \(rule allow_root: `,
		*other.ID: `user "daemon" in namespace "ml-research" \(rule namespace_users: this namespace may run tasks as \["nobody", "bin"\]`,
	}
	for jobID, re := range refused {
		failed := s.c.WaitForAlloc("ml-research", jobID, 90*time.Second, testcluster.ClientStatus(api.AllocClientStatusFailed))
		ev := waitEvent(t, s.c, failed.ID, re, 10*time.Second)
		must.Eq(t, api.TaskDriverFailure, ev.Type)
		for _, e := range s.c.TaskEvents(failed.ID, "train") {
			must.NotEq(t, api.TaskStarted, e.Type, must.Sprint("a refused task never starts"))
		}
		t.Logf("%s: %s", jobID, ev.DisplayMessage)
	}
	for _, id := range []string{*nobody.ID, *listed.ID} {
		_, _, err := s.c.API.Jobs().Deregister(id, true, &api.WriteOptions{Namespace: "ml-research"})
		must.NoError(t, err)
	}
}

// devScript reports, for every GPU node and the stray node, whether the
// task can open it, and lists the GPU nodes in its /dev. It has no "${":
// the client interpolates task configs.
const devScript = `for d in /dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3 /opt/stray/nvidia7; do
  if out=$(head -c 0 "$d" 2>&1); then echo "$d => opened"; else echo "$d => $out"; fi
done
echo "nodes=$(ls /dev | grep -E '^nvidia[0-9]+$' | sort | tr '\n' ' ')"
echo "visible=$NVIDIA_VISIBLE_DEVICES uid=$(id -u)"
exec sleep 300`

// devices: the device cgroup and the chroot's /dev hold only the
// reserved GPUs.
func (s *isoSuite) devices(t *testing.T) {
	one, _ := s.c.RegisterHCL("gpu1.nomad.hcl", probeJob("gpu1", "ml-research", "", 1, devScript))
	a := s.c.WaitForAlloc("ml-research", *one.ID, 90*time.Second, testcluster.ClientStatus(api.AllocClientStatusRunning))
	m := waitLog(t, s.c, a.ID, `visible=(\S+) uid=65534\n`, time.Minute)
	out := s.c.TaskLogs(a.ID, "train", "stdout")
	t.Logf("1-GPU task:\n%s", out)
	own := s.minors(t, m[1])
	must.Len(t, 1, own)
	for i := 0; i < 4; i++ {
		node := fmt.Sprintf("/dev/nvidia%d", i)
		if i == own[0] {
			// Past the device cgroup; with no NVIDIA driver on this host
			// the kernel then answers ENXIO, with one it would open.
			must.RegexMatch(t, opened(node, "opened|.*: No such device or address"), out)
			continue
		}
		must.RegexMatch(t, opened(node, ".*: No such file or directory"), out, must.Sprint("another GPU's node is absent"))
	}
	must.RegexMatch(t, opened("/opt/stray/nvidia7", ".*: Operation not permitted"), out,
		must.Sprint("the device cgroup refuses an unreserved GPU"))
	must.StrContains(t, out, fmt.Sprintf("nodes=nvidia%d \n", own[0]))
	s.execAndStats(t, a.ID)

	two, _ := s.c.RegisterHCL("gpu2.nomad.hcl", probeJob("gpu2", "ml-research", "", 2, devScript))
	a2 := s.c.WaitForAlloc("ml-research", *two.ID, 90*time.Second, testcluster.ClientStatus(api.AllocClientStatusRunning))
	m = waitLog(t, s.c, a2.ID, `visible=(\S+) uid=65534\n`, time.Minute)
	out = s.c.TaskLogs(a2.ID, "train", "stdout")
	t.Logf("2-GPU task:\n%s", out)
	pair := s.minors(t, m[1])
	must.Len(t, 2, pair)
	must.StrContains(t, out, fmt.Sprintf("nodes=nvidia%d nvidia%d \n", pair[0], pair[1]), must.Sprint("exactly its two GPUs"))
	must.SliceNotContains(t, pair, own[0], must.Sprint("the 1-GPU task still holds its GPU"))
	for _, id := range []string{*one.ID, *two.ID} {
		_, _, err := s.c.API.Jobs().Deregister(id, true, &api.WriteOptions{Namespace: "ml-research"})
		must.NoError(t, err)
	}
}

// minors maps a NVIDIA_VISIBLE_DEVICES value to sorted minor numbers.
func (s *isoSuite) minors(t *testing.T, visible string) []int {
	var out []int
	for _, id := range strings.Split(visible, ",") {
		n, ok := s.gpuByID[id]
		must.True(t, ok, must.Sprintf("unknown GPU %q", id))
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// opened matches devScript's line for node with the outcome regexp want.
func opened(node, want string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(node) + ` => (` + want + `)$`)
}

// execAndStats checks that nomad alloc exec runs inside the isolated task
// as its user (its own PID namespace, its /dev) and that the executor's
// resource usage reaches Nomad.
func (s *isoSuite) execAndStats(t *testing.T, allocID string) {
	nomad, err := testcluster.NomadBinary()
	must.NoError(t, err)
	cmd := exec.Command(nomad, "alloc", "exec", "-address="+s.c.Addr(), "-namespace=ml-research", "-task=train", allocID,
		"/bin/sh", "-c", "echo exec uid=$(id -u) procs=$(ls /proc | grep -c '^[0-9]') gpus=$(ls /dev | grep -c '^nvidia[0-9]')")
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprintf("nomad alloc exec: %s", out))
	// The task's sleep, the exec'd shell and its children: a handful of
	// pids, not the host's hundreds.
	must.RegexMatch(t, regexp.MustCompile(`exec uid=65534 procs=[1-9] gpus=1\n`), string(out))

	// The task's main process (PID 1 inside) sits in its own devices
	// cgroup, and in the cpuset the client chose.
	out, err = exec.Command(nomad, "alloc", "exec", "-address="+s.c.Addr(), "-namespace=ml-research", "-task=train", allocID,
		"/bin/cat", "/proc/1/cgroup").CombinedOutput()
	must.NoError(t, err, must.Sprintf("nomad alloc exec: %s", out))
	t.Logf("cgroups of the task's main process:\n%s", out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^\d+:devices:/allot-ckpt-`+regexp.QuoteMeta(allocID)+`-train$`), string(out))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^\d+:cpuset:/.+/shared$`), string(out))           // Nomad's shared cpuset
	must.RegexMatch(t, regexp.MustCompile(`(?m)^\d+:memory:/nomad/[0-9a-f-]{36}$`), string(out)) // the executor's limits

	s.c.Eventually(30*time.Second, "task resource usage", func() error {
		stats, err := s.c.API.Allocations().Stats(&api.Allocation{ID: allocID, Namespace: "ml-research"}, nil)
		if err != nil {
			return err
		}
		ts := stats.Tasks["train"]
		if ts == nil || ts.ResourceUsage == nil || ts.ResourceUsage.MemoryStats == nil || len(ts.ResourceUsage.MemoryStats.Measured) == 0 {
			return fmt.Errorf("no measured memory stats yet: %+v", stats.Tasks)
		}
		return nil
	})
}
