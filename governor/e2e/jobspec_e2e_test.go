//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
)

// jobSpec builds the jobspec most tests of this package submit: one
// group "g" of one raw_exec task "t" that sleeps, with cpu 100, memory 64
// and GPUs nvidia/gpu devices.
type jobSpec struct {
	ID, Namespace string
	// Type is the job type ("batch" when empty); Priority is written
	// when not 0.
	Type     string
	Priority int
	// Note, when set, is the job's meta note (a version marker).
	Note string
	// Secs is how long the task sleeps ("600" when empty).
	Secs string
	// MaxRuntime, when set, is the job's allot.max-runtime.
	MaxRuntime string
	// GPUs is the task's nvidia/gpu count; 0 writes no device block.
	GPUs int
	// UserRule adds the group constraint userRule (${attr.kernel.name} =
	// linux), a user's own constraint every governor write must keep.
	UserRule bool
	// SlowStop makes the task ignore the interrupt Nomad stops it with
	// (kill_timeout 10 s): a stopped allocation stays running for 10 s.
	// Nomad replaces a stopped batch allocation only until it finishes
	// (one that finished without failing counts as done), so this is
	// what keeps a blocked replacement blocked long enough to be seen.
	SlowStop bool
}

// HCL is the jobspec.
func (s jobSpec) HCL() string {
	typ, secs := s.Type, s.Secs
	if typ == "" {
		typ = "batch"
	}
	if secs == "" {
		secs = "600"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\njob %q {\n  namespace = %q\n  type      = %q\n  node_pool = \"gpu\"\n", s.ID, s.Namespace, typ)
	if s.Priority != 0 {
		fmt.Fprintf(&b, "  priority  = %d\n", s.Priority)
	}
	switch {
	case s.MaxRuntime != "" && s.Note != "":
		fmt.Fprintf(&b, "  meta      = { note = %q, \"allot.max-runtime\" = %q }\n", s.Note, s.MaxRuntime)
	case s.MaxRuntime != "":
		fmt.Fprintf(&b, "  meta      = { \"allot.max-runtime\" = %q }\n", s.MaxRuntime)
	case s.Note != "":
		fmt.Fprintf(&b, "  meta { note = %q }\n", s.Note)
	}
	b.WriteString("  group \"g\" {\n")
	if s.UserRule {
		b.WriteString("    constraint {\n      attribute = \"${attr.kernel.name}\"\n      value     = \"linux\"\n    }\n")
	}
	command, args := "/bin/sleep", fmt.Sprintf("%q", secs)
	if s.SlowStop {
		command, args = "/bin/sh", fmt.Sprintf(`"-c", "trap '' INT TERM; exec /bin/sleep %s"`, secs)
		b.WriteString("    task \"t\" {\n      kill_timeout = \"10s\"\n")
	} else {
		b.WriteString("    task \"t\" {\n")
	}
	fmt.Fprintf(&b, `      driver = "raw_exec"
      config {
        command = %q
        args    = [%s]
      }
      resources {
        cpu    = 100
        memory = 64
`, command, args)
	if s.GPUs > 0 {
		fmt.Fprintf(&b, "        device \"nvidia/gpu\" { count = %d }\n", s.GPUs)
	}
	b.WriteString("      }\n    }\n  }\n}\n")
	return b.String()
}

// write writes the jobspec to <dir>/<ID>.nomad.hcl and returns its path.
func (s jobSpec) write(t must.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, s.ID+".nomad.hcl")
	must.NoError(t, os.WriteFile(p, []byte(s.HCL()), 0o644))
	return p
}

// gpuInventory is an inventory file (nomad-device-accel) of one node
// with gpus H200s on one NVSwitch, the first half on NUMA node 0.
func gpuInventory(seed string, gpus int) string {
	numa := make([]string, gpus)
	for i := range numa {
		numa[i] = "0"
		if i >= gpus/2 {
			numa[i] = "1"
		}
	}
	return fmt.Sprintf(`
seed           = %q
driver_version = "550.54.15"
cuda_version   = "12.4"
gpu "H200" {
  count              = %d
  memory_mib         = 143771
  compute_capability = "9.0"
  power_limit_w      = 700
  topology           = "nvswitch"
  numa_nodes         = [%s]
}
`, seed, gpus, strings.Join(numa, ", "))
}

// writeInventory writes gpuInventory(name, gpus) to <dir>/<name>.hcl and
// returns its path.
func writeInventory(t must.T, dir, name string, gpus int) string {
	t.Helper()
	p := filepath.Join(dir, name+".hcl")
	must.NoError(t, os.WriteFile(p, []byte(gpuInventory(name, gpus)), 0o644))
	return p
}

// gpuClients are clients of node pool gpu, one per name, each with gpus
// inventory H200s (nomad-device-accel), ready once they fingerprint them.
func gpuClients(t must.T, dir string, gpus int, names ...string) []testcluster.ClientSpec {
	t.Helper()
	var clients []testcluster.ClientSpec
	for _, name := range names {
		p := writeInventory(t, dir, name, gpus)
		clients = append(clients, testcluster.ClientSpec{Name: name, NodePool: "gpu",
			PluginConfig: map[string]string{"nomad-device-accel": fmt.Sprintf("inventory_file = %q", p)},
			Ready:        testcluster.HasDevices("nvidia/gpu/H200", gpus)})
	}
	return clients
}
