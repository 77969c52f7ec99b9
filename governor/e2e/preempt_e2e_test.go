//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/internal/testcluster"
)

// trainTmpl is a ckpt-driver job running the Go toy trainer: count
// allocations of gpus H200 each, in class class.
const trainTmpl = `
job %q {
  namespace = %q
  type      = "batch"
  node_pool = "gpu"
  meta = {
    "allot.class" = %q
  }
  group "g" {
    count = %d
    reschedule {
      attempts  = 0
      unlimited = false
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "train" {
      driver       = "ckpt"
      kill_timeout = "20s"
      config {
        command = %q
        args    = [%s]
        checkpoint {
          signal  = "SIGUSR1"
          timeout = "10s"
        }
      }
      resources {
        cpu    = 100
        memory = 64
        device "nvidia/gpu" { count = %d }
      }
    }
  }
}
`

// gangTmpl is the gang job Nomad can only partly place.
var gangTmpl = fmt.Sprintf(distinctHostsTmpl, "gang", "team-c")

// distinctHostsTmpl (job ID, namespace) asks for three allocations on
// distinct hosts of the two-node pool gpu: the engine does not model
// distinct_hosts, so it admits the job, and Nomad can place only two.
const distinctHostsTmpl = `
job %q {
  namespace = %q
  type      = "batch"
  node_pool = "gpu"
  constraint {
    operator = "distinct_hosts"
    value    = "true"
  }
  group "g" {
    count = 3
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }
  }
}
`

// preemptEnv is a cluster of two 4-GPU clients with the ckpt driver and a
// governor with short back-off and gang timeout.
type preemptEnv struct {
	*env
	trainer string
}

func newPreemptEnv(t testing.TB) *preemptEnv { return newPreemptEnvWith(t, "") }

// newPreemptEnvWith is newPreemptEnv with extra lines of governor
// configuration.
func newPreemptEnvWith(t testing.TB, extra string) *preemptEnv {
	dir, root := t.TempDir(), t.TempDir()
	var clients []testcluster.ClientSpec
	for _, name := range []string{"gpu-1", "gpu-2"} {
		p := writeInventory(t, dir, name, 4)
		clients = append(clients, testcluster.ClientSpec{Name: name, NodePool: "gpu",
			PluginConfig: map[string]string{
				"nomad-device-accel": fmt.Sprintf("inventory_file = %q", p),
				// One checkpoint root for both clients: shared storage.
				"nomad-driver-ckpt": fmt.Sprintf("checkpoint_root = %q\npoll_interval = \"100ms\"\nsaved_event_interval = \"1s\"\n%s", root, testcluster.CkptUnisolated),
			},
			Ready: testcluster.HasDevices("nvidia/gpu/H200", 4)})
	}
	c := testcluster.New(t, testcluster.Options{Plugins: []string{"nomad-device-accel", "nomad-driver-ckpt"}, Clients: clients})
	nomad, err := testcluster.NomadBinary()
	must.NoError(t, err)
	e := &env{t: t, c: c, nomad: nomad, dir: dir}
	e.namespace("team-a", map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "8"})
	e.namespace("team-b", map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "8"})
	e.namespace("team-c", map[string]string{"allot.cohort": "other", "allot.quota.cpu": "1000"})
	cfg := filepath.Join(dir, "governor.hcl")
	must.NoError(t, os.WriteFile(cfg, []byte("cycle_interval = \"1s\"\nbackoff_base = \"2s\"\nbackoff_cap = \"10s\"\ngang_timeout = \"15s\"\n"+extra), 0o644))
	e.g = c.StartGovernor("-config", cfg)
	e.gov = &allotapi.Client{Address: e.g.Addr}
	return &preemptEnv{env: e, trainer: testcluster.BuildToyTrainer(t, dir)}
}

// submit runs `nomad job run` through the governor's proxy.
func (e *preemptEnv) submit(name, src string) {
	e.t.Helper()
	p := filepath.Join(e.dir, name+".nomad.hcl")
	must.NoError(e.t, os.WriteFile(p, []byte(src), 0o644))
	cmd := exec.Command(e.nomad, "job", "run", "-detach", p)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+e.g.Addr, "NOMAD_NAMESPACE=", "NOMAD_TOKEN=")
	out, err := cmd.CombinedOutput()
	must.NoError(e.t, err, must.Sprintf("nomad job run: %s", out))
}

func (e *preemptEnv) train(ns, id, class string, count, gpus int, args ...string) {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	e.submit(id, fmt.Sprintf(trainTmpl, id, ns, class, count, e.trainer, strings.Join(q, ", "), gpus))
}

// allocs returns the allocations of ns/id.
func (e *preemptEnv) allocs(ns, id string) []*api.AllocationListStub {
	list, _, err := e.c.API.Jobs().Allocations(id, false, &api.QueryOptions{Namespace: ns})
	must.NoError(e.t, err)
	return list
}

// runningAllocs waits until ns/id has n running allocations not in skip.
func (e *preemptEnv) runningAllocs(ns, id string, n int, timeout time.Duration, skip map[string]bool) []*api.AllocationListStub {
	e.t.Helper()
	var out []*api.AllocationListStub
	e.c.Eventually(timeout, fmt.Sprintf("%d running allocations of %s/%s", n, ns, id), func() error {
		out = out[:0]
		for _, a := range e.allocs(ns, id) {
			if a.ClientStatus == api.AllocClientStatusRunning && !skip[a.ID] {
				out = append(out, a)
			}
		}
		if len(out) < n {
			return fmt.Errorf("%d running", len(out))
		}
		return nil
	})
	return out
}

// hasEvent reports whether the task's events match re.
func (e *preemptEnv) hasEvent(allocID, re string) bool {
	rx := regexp.MustCompile(re)
	for _, ev := range e.c.TaskEvents(allocID, "train") {
		if rx.MatchString(ev.DisplayMessage) {
			return true
		}
	}
	return false
}

func (e *preemptEnv) metric(name string) string {
	resp, err := http.Get(e.g.Addr + "/metrics")
	must.NoError(e.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must.NoError(e.t, err)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name) {
			return line
		}
	}
	return ""
}

func (e *preemptEnv) decisions() []allotapi.Decision {
	ds, err := e.gov.Decisions(context.Background())
	must.NoError(e.t, err)
	return ds.Decisions
}

// reclaimResult is what the reclaim scenario measured.
type reclaimResult struct {
	latency time.Duration
	lost    []float64
}
