//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/internal/browser"
	"github.com/allot-sh/allot/internal/testcluster"
)

// consoleConfig: a 1 s cycle, the ledger (accrual and capacity samples
// every 2 s, a price per H200-hour), idle detection with a short
// window and a grace long enough that nothing is reclaimed during the test
// (candidates stay suspects), and a short auth cache.
const consoleConfig = `
cycle_interval = "1s"
ledger {
  path         = %q
  accrue_every = "2s"
  currency     = "EUR"
  device_rates = { "nvidia/gpu/H200" = 4.00 }
}
idle {
  period    = "1s"
  window    = "3s"
  grace     = "30m"
  notice    = "10m"
  threshold = 5
}
auth { cache_ttl = "2s" }
`

// consoleInventory: 4 H200s with scripted telemetry (gpu-1.telemetry.json
// beside it).
const consoleInventory = `
seed = "gpu-1"
gpu "H200" {
  count      = 4
  memory_mib = 143771
}
`

// consoleEnv is one ACL-enabled cluster with the governor (ledger and idle
// on), two tenants, allotctl built, and their tokens.
type consoleEnv struct {
	t        *testing.T
	c        *testcluster.Cluster
	g        *testcluster.Governor
	dir      string
	nomad    string
	allotctl string
	tokens   map[string]string // "management", "team-a", "team-b"
	telem    string            // the telemetry file
}

// newConsoleEnv starts the cluster and submits, through the governor with
// each tenant's token, one running and some queued jobs per tenant:
// team-a (quota 2, limit 2) runs a-train (1 GPU) and holds a-wait1 (2)
// and a-wait2 (2); team-b (limit 2) runs b-run (1) and holds b-wait (2).
func newConsoleEnv(t *testing.T) *consoleEnv {
	dir := t.TempDir()
	inv := filepath.Join(dir, "gpu-1.hcl")
	must.NoError(t, os.WriteFile(inv, []byte(consoleInventory), 0o644))
	e := &consoleEnv{t: t, dir: dir, telem: filepath.Join(dir, "gpu-1.telemetry.json")}
	e.writeTelemetry(nil, nil)
	e.c = testcluster.New(t, testcluster.Options{ACL: true, Plugins: []string{"nomad-device-accel"},
		Clients: []testcluster.ClientSpec{{Name: "gpu-1", NodePool: "gpu",
			PluginConfig: map[string]string{"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv)},
			Ready:        testcluster.HasDevices("nvidia/gpu/H200", 4)}}})
	for _, ns := range []string{"team-a", "team-b"} {
		_, err := e.c.API.Namespaces().Register(&api.Namespace{Name: ns,
			Meta: map[string]string{"allot.quota.gpu": "2", "allot.limit.gpu": "2"}}, nil)
		must.NoError(t, err)
	}
	// Until a job's device is scripted (idleDevice), no device reports
	// telemetry: the inventory's synthetic stats would show as zombies.
	e.writeTelemetry(nil, e.devices(""))
	var err error
	e.nomad, err = testcluster.NomadBinary()
	must.NoError(t, err)
	e.allotctl = filepath.Join(dir, "allotctl")
	must.NoError(t, testcluster.GoBuild("./cli", e.allotctl))
	cfg := filepath.Join(dir, "governor.hcl")
	must.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(consoleConfig, filepath.Join(dir, "ledger.db"))), 0o600))
	e.g = e.c.StartGovernor("-config", cfg, "-nomad-token", e.c.ManagementToken())
	e.tokens = map[string]string{"management": e.c.ManagementToken(),
		"team-a": e.c.TenantToken("team-a"), "team-b": e.c.TenantToken("team-b")}

	e.run("team-a", "a-train", 1)
	e.run("team-b", "b-run", 1)
	e.waitRunning("team-a", "a-train")
	e.waitRunning("team-b", "b-run")
	e.run("team-a", "a-wait1", 2)
	e.run("team-b", "b-wait", 2)
	e.run("team-a", "a-wait2", 2)
	e.c.Eventually(30*time.Second, "three jobs queued", func() error {
		var q struct{ Jobs []struct{ JobID string } }
		if err := json.Unmarshal([]byte(e.ctl("management", "queue", "-json")), &q); err != nil {
			return err
		}
		if len(q.Jobs) != 3 {
			return fmt.Errorf("queue: %+v", q.Jobs)
		}
		return nil
	})
	// a-train's device sits idle with memory held: an idle candidate.
	e.idleDevice("team-a", "a-train")
	return e
}

// run submits a one-task job asking for gpus H200s with the real nomad
// CLI through the governor, with the tenant's own token.
func (e *consoleEnv) run(ns, id string, gpus int) {
	e.t.Helper()
	p := jobSpec{ID: id, Namespace: ns, Note: "console e2e", GPUs: gpus}.write(e.t, e.dir)
	cmd := exec.Command(e.nomad, "job", "run", "-detach", p)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+e.g.Addr, "NOMAD_NAMESPACE=", "NOMAD_TOKEN="+e.tokens[ns])
	out, err := cmd.CombinedOutput()
	must.NoError(e.t, err, must.Sprintf("nomad job run %s: %s", id, out))
}

func (e *consoleEnv) waitRunning(ns, id string) *api.AllocationListStub {
	e.t.Helper()
	return e.c.WaitForAlloc(ns, id, 90*time.Second, testcluster.ClientStatus("running"))
}

// ctl runs the built allotctl against the governor as caller and returns
// its stdout; it fails the test when allotctl fails.
func (e *consoleEnv) ctl(caller string, args ...string) string {
	e.t.Helper()
	cmd := exec.Command(e.allotctl, args...)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+e.g.Addr, "ALLOT_ADDR=", "NOMAD_NAMESPACE=", "NOMAD_TOKEN="+e.tokens[caller])
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	must.NoError(e.t, err, must.Sprintf("allotctl %s: %s", strings.Join(args, " "), stderr.String()))
	return string(out)
}

// writeTelemetry scripts the inventory's device stats (device ID → stats)
// and the devices that report none.
func (e *consoleEnv) writeTelemetry(devices map[string]any, missing []string) {
	e.t.Helper()
	if devices == nil {
		devices = map[string]any{}
	}
	b, err := json.Marshal(map[string]any{"devices": devices, "missing": missing})
	must.NoError(e.t, err)
	must.NoError(e.t, os.WriteFile(e.telem+".tmp", b, 0o644))
	must.NoError(e.t, os.Rename(e.telem+".tmp", e.telem))
}

// devices lists gpu-1's device IDs but except.
func (e *consoleEnv) devices(except string) []string {
	var out []string
	for _, d := range e.c.Node(e.c.Client("gpu-1")).NodeResources.Devices {
		for _, in := range d.Instances {
			if in.ID != except {
				out = append(out, in.ID)
			}
		}
	}
	return out
}

// idleDevice scripts the device of ns/id's allocation idle with memory
// held, and waits until the governor lists it as an idle candidate.
func (e *consoleEnv) idleDevice(ns, id string) {
	e.t.Helper()
	stub := e.waitRunning(ns, id)
	a, _, err := e.c.API.Allocations().Info(stub.ID, &api.QueryOptions{Namespace: ns})
	must.NoError(e.t, err)
	var dev string
	for _, tr := range a.AllocatedResources.Tasks {
		for _, d := range tr.Devices {
			dev = d.DeviceIDs[0]
		}
	}
	must.NotEq(e.t, "", dev)
	// The other devices report no telemetry (never idle, never zombies).
	e.writeTelemetry(map[string]any{dev: map[string]any{"utilization": 1, "memory_used_mib": 30000, "processes": 1}}, e.devices(dev))
	e.c.Eventually(60*time.Second, "an idle candidate", func() error {
		var a allotapi.IdleAnswer
		if err := json.Unmarshal([]byte(e.ctl("management", "idle", "-json")), &a); err != nil {
			return err
		}
		for _, c := range a.Candidates {
			if c.JobID == id {
				return nil
			}
		}
		return fmt.Errorf("candidates: %+v", a.Candidates)
	})
}

// signIn starts a browser (own profile) signed in with the caller's token.
func (e *consoleEnv) signIn(caller string) *browser.Browser {
	e.t.Helper()
	b := browser.New(e.t, browser.Options{})
	status, err := b.Navigate(e.g.Addr + "/ui/signin")
	must.NoError(e.t, err)
	must.Eq(e.t, 200, status)
	status, err = b.Submit(`form[action="/ui/signin"]`, map[string]string{"token": e.tokens[caller]})
	must.NoError(e.t, err)
	must.Eq(e.t, 200, status)
	loc, err := b.Location()
	must.NoError(e.t, err)
	must.StrNotContains(e.t, loc, "signin", must.Sprintf("signed in as %s", caller))
	return b
}

// page loads a console path and fails on a non-200 answer.
func (e *consoleEnv) page(b *browser.Browser, path string) {
	e.t.Helper()
	status, err := b.Navigate(e.g.Addr + path)
	must.NoError(e.t, err)
	must.Eq(e.t, 200, status, must.Sprintf("GET %s", path))
}

// text is the visible text of the page's main element.
func text(t *testing.T, b *browser.Browser) string {
	t.Helper()
	s, err := b.Text("main")
	must.NoError(t, err)
	return s
}

// screenshot saves docs/img/console-<name>.png when ALLOT_SCREENSHOTS=1.
func screenshot(t *testing.T, b *browser.Browser, name string) {
	t.Helper()
	if os.Getenv("ALLOT_SCREENSHOTS") != "1" {
		return
	}
	root, err := testcluster.RepoRoot()
	must.NoError(t, err)
	must.NoError(t, b.Screenshot(filepath.Join(root, "docs", "img", "console-"+name+".png")))
}

// csvWindow reads since and until of the usage page's CSV link.
func csvWindow(t *testing.T, link string) (string, string) {
	u, err := url.Parse(link)
	must.NoError(t, err)
	since, until := u.Query().Get("since"), u.Query().Get("until")
	must.NotEq(t, "", since)
	must.NotEq(t, "", until)
	return since, until
}
