//go:build e2e

package accel_test

import (
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

	"github.com/allot-sh/allot/internal/testcluster"
)

// h200Box is the first client's inventory: an 8×H200 NVSwitch box.
const h200Box = `
seed           = "e2e-h200"
driver_version = "550.54.15"
cuda_version   = "12.4"
gpu "H200" {
  count              = 8
  memory_mib         = 143771
  compute_capability = "9.0"
  power_limit_w      = 700
  topology           = "nvswitch"
  numa_nodes         = [0, 0, 0, 0, 1, 1, 1, 1]
}
`

// gpuJob asks for two NVIDIA GPUs of a topology class and prints the
// visible-devices variables the plugin's Reserve sets, then sleeps.
const gpuJob = `
variable "topology" { type = string }
variable "sleep" {
  type    = string
  default = "0"
}

job "JOBNAME" {
  type = "batch"

  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo NVIDIA=$NVIDIA_VISIBLE_DEVICES; echo CUDA=$CUDA_VISIBLE_DEVICES; sleep ${var.sleep}"]
      }
      resources {
        cpu    = 50
        memory = 32
        device "nvidia/gpu" {
          count = 2
          constraint {
            attribute = "${device.attr.topology}"
            value     = var.topology
          }
        }
      }
    }
  }
}
`

// deviceJob is a one-shot batch job (name, device block).
const deviceJob = `
job "%s" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      resources {
        cpu    = 50
        memory = 32
        %s
      }
    }
  }
}
`

func runGPUJob(t *testing.T, c *testcluster.Cluster, name, topology, sleep string) *api.Job {
	t.Helper()
	src := strings.Replace(gpuJob, "JOBNAME", name, 1)
	job, _ := c.RegisterHCL(name+".nomad.hcl", src, "topology="+topology, "sleep="+sleep)
	return job
}

// reservedDevices returns the device group and IDs Nomad gave task t.
func reservedDevices(t *testing.T, c *testcluster.Cluster, allocID string) (string, []string) {
	t.Helper()
	alloc, _, err := c.API.Allocations().Info(allocID, nil)
	must.NoError(t, err)
	devs := alloc.AllocatedResources.Tasks["t"].Devices
	must.Len(t, 1, devs)
	ids := append([]string(nil), devs[0].DeviceIDs...)
	return devs[0].Vendor + "/" + devs[0].Type + "/" + devs[0].Name, ids
}

func TestE2E_DevicePlugin(t *testing.T) {
	dir := t.TempDir()
	h200Path := filepath.Join(dir, "h200.hcl")
	must.NoError(t, os.WriteFile(h200Path, []byte(h200Box), 0o644))
	mixedSrc, err := os.ReadFile("../inventory/examples/pcie-a100-ascend.hcl")
	must.NoError(t, err)
	mixedPath := filepath.Join(dir, "mixed.hcl")
	must.NoError(t, os.WriteFile(mixedPath, mixedSrc, 0o644))

	c := testcluster.New(t, testcluster.Options{
		Plugins: []string{"nomad-device-accel"},
		Clients: []testcluster.ClientSpec{
			{
				Name: "h200",
				PluginConfig: map[string]string{"nomad-device-accel": fmt.Sprintf(
					"inventory_file = %q\nfingerprint_period = \"1s\"", h200Path)},
				Ready: testcluster.HasDevices("nvidia/gpu/H200", 8),
			},
			{
				Name: "mixed",
				PluginConfig: map[string]string{"nomad-device-accel": fmt.Sprintf(
					"inventory_file = %q\nfingerprint_period = \"1s\"\ntopology_grouping = \"island\"", mixedPath)},
				Ready: testcluster.AllReady(
					testcluster.HasDevices("nvidia/gpu", 4),
					testcluster.HasDevices("huawei/npu", 8),
				),
			},
		},
	})
	h200, mixed := c.Client("h200"), c.Client("mixed")

	t.Run("node status shows the groups with their attributes", func(t *testing.T) {
		out := nodeStatus(t, c, h200.NodeID)
		for _, re := range []string{
			`Device Group\s+= nvidia/gpu/H200`, `topology\s+= nvswitch`, `memory\s+= 143771 MiB`,
			`nvlink_links\s+= 18`, `compute_capability\s+= 9\.0`, `driver_version\s+= 550\.54\.15`, `numa_nodes\s+= 0,1`,
		} {
			must.RegexMatch(t, regexp.MustCompile(re), out)
		}
		out = nodeStatus(t, c, mixed.NodeID)
		for _, re := range []string{
			`Device Group\s+= nvidia/gpu/A100-island0`, `Device Group\s+= nvidia/gpu/A100-island1`,
			`Device Group\s+= huawei/npu/Ascend910B-island0`, `topology\s+= nvlink`, `island\s+= 1`, `model\s+= A100`,
		} {
			must.RegexMatch(t, regexp.MustCompile(re), out)
		}
	})

	t.Run("per-device stats reach the node's host stats", func(t *testing.T) {
		c.Eventually(30*time.Second, "device stats of h200", func() error {
			hs, err := c.API.Nodes().Stats(h200.NodeID, nil)
			if err != nil {
				return err
			}
			for _, g := range hs.DeviceStats {
				if g.Name != "H200" || len(g.InstanceStats) != 8 {
					continue
				}
				for id, s := range g.InstanceStats {
					if s.Summary == nil || s.Summary.IntNumeratorVal == nil || s.Stats == nil {
						return fmt.Errorf("device %s: incomplete stats %+v", id, s)
					}
					util := s.Stats.Attributes["GPU utilization"]
					if util == nil || util.FloatNumeratorVal == nil || *util.FloatNumeratorVal <= 0 {
						return fmt.Errorf("device %s: no utilization in %+v", id, s.Stats.Attributes)
					}
				}
				return nil
			}
			return fmt.Errorf("no H200 stats yet: %d groups", len(hs.DeviceStats))
		})
	})

	t.Run("a topology constraint picks the node and Reserve sets both variables", func(t *testing.T) {
		job := runGPUJob(t, c, "nvswitch-env", "nvswitch", "0")
		alloc := c.WaitForAlloc(api.DefaultNamespace, *job.ID, 2*time.Minute, testcluster.ClientStatus(api.AllocClientStatusComplete))
		must.Eq(t, h200.NodeID, alloc.NodeID)
		group, ids := reservedDevices(t, c, alloc.ID)
		must.Eq(t, "nvidia/gpu/H200", group)
		must.Len(t, 2, ids)
		logs := c.TaskLogs(alloc.ID, "t", "stdout")
		must.StrContains(t, logs, "NVIDIA="+strings.Join(ids, ","))
		must.StrContains(t, logs, "CUDA="+strings.Join(ids, ","))
	})

	t.Run("documented device constraints and affinities place as described", func(t *testing.T) {
		tests := map[string]struct {
			device string
			want   *testcluster.Client
		}{
			"model memory and compute capability": {`device "nvidia/gpu" {
          count = 4
          constraint {
            attribute = "${device.attr.model}"
            operator  = "set_contains_any"
            value     = "H100,H200"
          }
          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "80 GiB"
          }
          constraint {
            attribute = "${device.attr.compute_capability}"
            operator  = "version"
            value     = ">= 9.0"
          }
        }`, h200},
			"npus by model": {`device "huawei/npu" {
          count = 8
          constraint {
            attribute = "${device.attr.model}"
            value     = "Ascend910B"
          }
        }`, mixed},
			"a100 by numa node": {`device "nvidia/gpu" {
          count = 2
          constraint {
            attribute = "${device.attr.numa_node}"
            value     = "1"
          }
          constraint {
            attribute = "${device.attr.model}"
            value     = "A100"
          }
          affinity {
            attribute = "${device.attr.topology}"
            operator  = "set_contains_any"
            value     = "nvswitch,nvlink"
            weight    = 80
          }
        }`, mixed},
		}
		i := 0
		for name, tc := range tests {
			i++
			t.Run(name, func(t *testing.T) {
				src := fmt.Sprintf(deviceJob, fmt.Sprintf("doc-%d", i), tc.device)
				job, _ := c.RegisterHCL("doc.nomad.hcl", src)
				alloc := c.WaitForAlloc(api.DefaultNamespace, *job.ID, 2*time.Minute, testcluster.ClientStatus(api.AllocClientStatusComplete))
				must.Eq(t, tc.want.NodeID, alloc.NodeID)
			})
		}
	})

	var pairJob *api.Job
	var busyGroup string
	t.Run("island grouping keeps a count=2 request inside one NVLink pair", func(t *testing.T) {
		pairJob = runGPUJob(t, c, "nvlink-pair", "nvlink", "600")
		alloc := c.WaitForAlloc(api.DefaultNamespace, *pairJob.ID, 2*time.Minute, testcluster.ClientStatus(api.AllocClientStatusRunning))
		must.Eq(t, mixed.NodeID, alloc.NodeID)
		group, ids := reservedDevices(t, c, alloc.ID)
		busyGroup = group
		pair := groupInstanceIDs(c.Node(mixed), group)
		sort.Strings(ids)
		must.Eq(t, pair, ids, must.Sprint("both GPUs are the whole NVLink pair"))
		must.StrContains(t, c.TaskLogs(alloc.ID, "t", "stdout"), "NVIDIA="+strings.Join(devicesOrder(t, c, alloc.ID), ","))
	})

	t.Run("an unhealthy GPU in the inventory leaves placement within a fingerprint period", func(t *testing.T) {
		must.NotNil(t, pairJob)
		// The other pair is the only place left for a second nvlink job;
		// mark one GPU of it unhealthy.
		free := "A100[0]"
		if strings.HasSuffix(busyGroup, "island0") {
			free = "A100[2]"
		}
		flipped := string(mixedSrc) + fmt.Sprintf("\nunhealthy = [%q]\n", free+": XID 79 (e2e)")
		flipped = strings.Replace(flipped, "unhealthy = []", "", 1)
		start := time.Now()
		must.NoError(t, os.WriteFile(mixedPath, []byte(flipped), 0o644))
		// Bound: the plugin sees the edit within fingerprint_period (1s); the
		// Nomad client then re-registers its node within 5-10s
		// (nodeUpdateRetryIntv plus stagger in client/client.go).
		c.Eventually(20*time.Second, "the server to see the unhealthy GPU", func() error {
			if n := testcluster.HealthyDevices(c.Node(mixed), "nvidia/gpu"); n != 3 {
				return fmt.Errorf("%d healthy GPUs on mixed, want 3", n)
			}
			return nil
		})
		t.Logf("server saw the health flip after %s (fingerprint_period 1s)", time.Since(start).Round(100*time.Millisecond))

		second := runGPUJob(t, c, "nvlink-second", "nvlink", "0")
		c.Eventually(time.Minute, "the second nvlink job to be blocked", func() error {
			evals, _, err := c.API.Jobs().Evaluations(*second.ID, nil)
			if err != nil {
				return err
			}
			for _, e := range evals {
				if e.Status == api.EvalStatusBlocked {
					return nil
				}
			}
			return fmt.Errorf("no blocked evaluation yet (%d evals)", len(evals))
		})
		allocs, _, err := c.API.Jobs().Allocations(*second.ID, true, nil)
		must.NoError(t, err)
		must.SliceEmpty(t, allocs, must.Sprint("a pair with an unhealthy GPU must not be placed on"))

		// Healing the GPU lets the blocked job run.
		must.NoError(t, os.WriteFile(mixedPath, mixedSrc, 0o644))
		alloc := c.WaitForAlloc(api.DefaultNamespace, *second.ID, 2*time.Minute, testcluster.ClientStatus(api.AllocClientStatusComplete))
		must.Eq(t, mixed.NodeID, alloc.NodeID)
		group, _ := reservedDevices(t, c, alloc.ID)
		must.NotEq(t, busyGroup, group)
	})
}

// groupInstanceIDs lists the sorted instance IDs of one device group.
func groupInstanceIDs(node *api.Node, group string) []string {
	var ids []string
	for _, g := range testcluster.DeviceGroups(node, group) {
		for _, inst := range g.Instances {
			ids = append(ids, inst.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

// devicesOrder is the alloc's device IDs in the order Nomad reserved them.
func devicesOrder(t *testing.T, c *testcluster.Cluster, allocID string) []string {
	_, ids := reservedDevices(t, c, allocID)
	return ids
}

// nodeStatus runs `nomad node status -verbose` against the cluster.
func nodeStatus(t *testing.T, c *testcluster.Cluster, nodeID string) string {
	t.Helper()
	bin, err := testcluster.NomadBinary()
	must.NoError(t, err)
	cmd := exec.Command(bin, "node", "status", "-verbose", nodeID)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+c.Addr())
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprint(string(out)))
	return string(out)
}
