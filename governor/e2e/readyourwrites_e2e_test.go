//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/internal/testcluster"
)

// rywAttempts bounds the tries at a submission and its reads with no
// cycle in between (a cycle may always slip in; the check then says
// nothing about the proxy and is tried again with another job).
const rywAttempts = 8

// TestE2E_ReadYourWrites: on the real stack (one client with 8 inventory
// H200s, governor with cycle_interval = "1h"), a job the proxy holds is in
// GET /allot/v1/queue and in `allotctl queue` at once, with the position
// the proxy answered, and its tenant's Queued count; a job the proxy
// admits is in its tenant's usage (GET /allot/v1/tenants) at once. A
// cycle also runs on every store change (200 ms apart), so each check
// starts right after a cycle (allot_cycle_seconds_count moved) and
// counts only when that count has not moved again once the reads are
// done: no plan was published in between, so what the reads show is the
// proxy's own decision (reconcile's provisional entries).
func TestE2E_ReadYourWrites(t *testing.T) {
	dir := t.TempDir()
	inv, err := filepath.Abs("../../device-plugin/inventory/examples/dev-node.hcl")
	must.NoError(t, err)
	c := testcluster.New(t, testcluster.Options{Plugins: []string{"nomad-device-accel"},
		Clients: []testcluster.ClientSpec{{Name: "gpu-1",
			PluginConfig: map[string]string{"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv)},
			Ready:        testcluster.HasDevices("nvidia/gpu/H200", 8)}}})
	_, err = c.API.NodePools().Register(&api.NodePool{Name: "nowhere"}, nil)
	must.NoError(t, err)
	_, err = c.API.Namespaces().Register(&api.Namespace{Name: "team",
		Meta: map[string]string{"allot.quota.gpu": "8", "allot.limit.gpu": "8"}}, nil)
	must.NoError(t, err)
	allotctl := filepath.Join(dir, "allotctl")
	must.NoError(t, testcluster.GoBuild("./cli", allotctl))
	cfg := filepath.Join(dir, "governor.hcl")
	must.NoError(t, os.WriteFile(cfg, []byte("cycle_interval = \"1h\"\n"), 0o600))
	g := c.StartGovernor("-config", cfg)
	r := &rywReader{t: t, addr: g.Addr, allotctl: allotctl}
	client, err := api.NewClient(&api.Config{Address: g.Addr})
	must.NoError(t, err)
	submit := func(j *api.Job) string {
		resp, _, err := client.Jobs().Register(j, nil)
		must.NoError(t, err)
		return resp.Warnings
	}
	c.Eventually(time.Minute, "the governor sees the node's 8 GPUs", func() error {
		if !strings.Contains(submit(rywJob("probe", "", 1)), "admitted") {
			return fmt.Errorf("probe not admitted yet")
		}
		_, _, err := client.Jobs().Deregister("probe", true, nil)
		return err
	})

	t.Run("a held job is in the queue at once", func(t *testing.T) {
		clean := 0
		tries := 0
		for i := 0; i < rywAttempts && clean == 0; i++ {
			tries++
			start := r.afterCycle(func() { submit(rywJob(fmt.Sprintf("trigger-%d", i), "nowhere", 1)) })
			id := fmt.Sprintf("held-%d", i)
			warn := submit(rywJob(id, "nowhere", 1))
			must.StrContains(t, warn, "is QUEUED")
			q := r.apiQueue()
			ctl := r.ctlQueue()
			tenant := r.tenant()
			entry, ok := find(q.Jobs, id)
			must.True(t, ok, must.Sprintf("%s not in GET /allot/v1/queue: %+v", id, q.Jobs))
			must.StrContains(t, warn, fmt.Sprintf("position %d of %d", entry.Position, q.Total))
			_, ok = find(ctl.Jobs, id)
			must.True(t, ok, must.Sprintf("%s not in allotctl queue: %+v", id, ctl.Jobs))
			must.Eq(t, q.Total, tenant.Queued, must.Sprint("every queued job is team's"))
			if r.cycles() == start {
				clean++
			}
		}
		must.Positive(t, clean, must.Sprintf("no check of %d ran without a cycle in between", rywAttempts))
		t.Logf("checks until one ran without a cycle in between: %d", tries)
	})

	t.Run("an admission is in its tenant's usage at once", func(t *testing.T) {
		clean := 0
		tries := 0
		for i := 0; i < rywAttempts && clean == 0; i++ {
			tries++
			start := r.afterCycle(func() { submit(rywJob(fmt.Sprintf("trigger-a%d", i), "nowhere", 1)) })
			before := r.tenant().Usage["gpu"]
			warn := submit(rywJob(fmt.Sprintf("small-%d", i), "", 1))
			must.StrContains(t, warn, "admitted")
			must.Eq(t, before+1, r.tenant().Usage["gpu"], must.Sprint("the admitted GPU counts at once"))
			if r.cycles() == start {
				clean++
			}
		}
		must.Positive(t, clean, must.Sprintf("no check of %d ran without a cycle in between", rywAttempts))
		t.Logf("checks until one ran without a cycle in between: %d", tries)
	})
}

// rywJob is a one-GPU batch job of namespace team sleeping, in node pool
// pool ("" for default; "nowhere" has no nodes, so it is held).
func rywJob(id, pool string, gpus uint64) *api.Job {
	ns := "team"
	j := api.NewBatchJob(id, id, "global", 50)
	j.Namespace = &ns
	if pool != "" {
		j.NodePool = &pool
	}
	task := api.NewTask("t", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"600"})
	cpu, mem := 100, 64
	task.Resources = &api.Resources{CPU: &cpu, MemoryMB: &mem,
		Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: &gpus}}}
	j.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	return j
}

func find(jobs []allotapi.QueueEntry, id string) (allotapi.QueueEntry, bool) {
	for _, e := range jobs {
		if e.JobID == id {
			return e, true
		}
	}
	return allotapi.QueueEntry{}, false
}

// rywReader reads the governor's API, metrics and allotctl.
type rywReader struct {
	t        *testing.T
	addr     string
	allotctl string
}

func (r *rywReader) get(path string, out any) {
	r.t.Helper()
	resp, err := http.Get(r.addr + path)
	must.NoError(r.t, err)
	defer resp.Body.Close()
	must.Eq(r.t, http.StatusOK, resp.StatusCode)
	must.NoError(r.t, json.NewDecoder(resp.Body).Decode(out))
}

func (r *rywReader) apiQueue() allotapi.Queue {
	var q allotapi.Queue
	r.get("/allot/v1/queue", &q)
	return q
}

func (r *rywReader) tenant() allotapi.Tenant {
	var l allotapi.TenantList
	r.get("/allot/v1/tenants", &l)
	for _, t := range l.Tenants {
		if t.Namespace == "team" {
			return t
		}
	}
	r.t.Fatalf("tenant team not listed: %+v", l.Tenants)
	return allotapi.Tenant{}
}

// ctlQueue runs `allotctl queue -json` against the governor.
func (r *rywReader) ctlQueue() allotapi.Queue {
	r.t.Helper()
	cmd := exec.Command(r.allotctl, "queue", "-json")
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+r.addr, "ALLOT_ADDR=", "NOMAD_NAMESPACE=", "NOMAD_TOKEN=")
	out, err := cmd.Output()
	must.NoError(r.t, err, must.Sprintf("allotctl queue: %s", out))
	var q allotapi.Queue
	must.NoError(r.t, json.Unmarshal(out, &q), must.Sprintf("allotctl queue -json: %s", out))
	return q
}

// cycles is allot_cycle_seconds_count: how many cycles have decided (a
// cycle publishes its plan after this count moves).
func (r *rywReader) cycles() int {
	r.t.Helper()
	resp, err := http.Get(r.addr + "/metrics")
	must.NoError(r.t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "allot_cycle_seconds_count "); ok {
			n, err := strconv.Atoi(v)
			must.NoError(r.t, err)
			return n
		}
	}
	must.NoError(r.t, sc.Err())
	r.t.Fatal("no allot_cycle_seconds_count in /metrics")
	return 0
}

// afterCycle runs trigger (a change that starts a cycle) and returns the
// cycle count as soon as it moved: the governor then waits 200 ms before
// its next cycle.
func (r *rywReader) afterCycle(trigger func()) int {
	r.t.Helper()
	before := r.cycles()
	trigger()
	var now int
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := testcluster.Poll(ctx, 2*time.Millisecond, func() error {
		if now = r.cycles(); now == before {
			return fmt.Errorf("no cycle since %d", before)
		}
		return nil
	})
	must.NoError(r.t, err)
	return now
}
