//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
)

// aclJobHCL is a tenant's job: a service-less batch job whose group and
// job names are secrets the other tenant must never read in an answer.
const aclJobHCL = `
job %[1]q {
  namespace = %[2]q
  type      = "batch"
  node_pool = "gpu"
  %[4]s
  group "grp-%[1]s" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 50
        memory = 32
        %[3]s
      }
    }
  }
}
`

// aclEnv is a Nomad cluster with ACLs on, the governor in front with its
// own management token, and two tenants with the policy of
// terraform/modules/tenant.
type aclEnv struct {
	t      *testing.T
	c      *testcluster.Cluster
	gov    string
	tokens map[string]string // caller → secret ("" for anonymous)
	hc     *http.Client
}

const aclScrapeToken = "scrape-secret-for-the-acl-e2e"

func newACLEnv(t *testing.T) *aclEnv {
	dir := t.TempDir()
	inv := writeInventory(t, dir, "gpu-1", 4)
	c := testcluster.New(t, testcluster.Options{ACL: true, Plugins: []string{"nomad-device-accel"},
		Clients: []testcluster.ClientSpec{{Name: "gpu-1", NodePool: "gpu",
			PluginConfig: map[string]string{"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv)},
			Ready:        testcluster.HasDevices("nvidia/gpu/H200", 4)}}})
	for _, ns := range []string{"team-a", "team-b"} {
		_, err := c.API.Namespaces().Register(&api.Namespace{Name: ns,
			Meta: map[string]string{"allot.quota.gpu": "2", "allot.limit.gpu": "2"}}, nil)
		must.NoError(t, err)
	}
	cfg := filepath.Join(dir, "governor.hcl")
	must.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf("cycle_interval = \"1s\"\nauth {\n  cache_ttl = \"2s\"\n  metrics_token = %q\n}\n",
		aclScrapeToken)), 0o600))
	g := c.StartGovernor("-config", cfg, "-nomad-token", c.ManagementToken())
	return &aclEnv{t: t, c: c, gov: g.Addr, hc: &http.Client{Timeout: 30 * time.Second}, tokens: map[string]string{
		"tenant-a": c.TenantToken("team-a"), "tenant-b": c.TenantToken("team-b"), "anonymous": "",
		"management": c.ManagementToken(), "scrape": aclScrapeToken}}
}

// call sends one request to the governor as caller and returns the
// status and body.
func (e *aclEnv) call(caller, method, path string, body any) (int, string) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		must.NoError(e.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.gov+path, rd)
	must.NoError(e.t, err)
	if tok := e.tokens[caller]; tok != "" {
		req.Header.Set("X-Nomad-Token", tok)
	}
	resp, err := e.hc.Do(req)
	must.NoError(e.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	must.NoError(e.t, err)
	return resp.StatusCode, string(out)
}

// job parses a tenant job with Nomad's parser (management token, straight
// to Nomad: parsing is no admission route).
func (e *aclEnv) job(ns, id, devices, extra string) *api.Job {
	e.t.Helper()
	j, err := e.c.API.Jobs().ParseHCL(fmt.Sprintf(aclJobHCL, id, ns, devices, extra), true)
	must.NoError(e.t, err)
	return j
}

// version returns the stored version and modify index of ns/id, or -1
// when Nomad has no such job.
func (e *aclEnv) version(ns, id string) (int, uint64) {
	j, _, err := e.c.API.Jobs().Info(id, &api.QueryOptions{Namespace: ns})
	if err != nil {
		return -1, 0
	}
	return int(*j.Version), *j.JobModifyIndex
}

// jobs maps each job of ns (dispatched and periodic children included) to
// its modify index.
func (e *aclEnv) jobs(ns string) map[string]uint64 {
	e.t.Helper()
	list, _, err := e.c.API.Jobs().List(&api.QueryOptions{Namespace: ns})
	must.NoError(e.t, err)
	out := map[string]uint64{}
	for _, j := range list {
		out[j.ID] = j.JobModifyIndex
	}
	return out
}

// aclRoute is one admission route, as the tenant of ns would call it.
type aclRoute struct {
	name, method, path string
	body               any
}

// routes lists every admission route against team-a's jobs.
func (e *aclEnv) routes(ns string) []aclRoute {
	gpu := `device "nvidia/gpu" { count = 1 }`
	return []aclRoute{
		{"register", "PUT", "/v1/jobs", api.JobRegisterRequest{Job: e.job(ns, "a-new", "", "")}},
		{"update", "PUT", "/v1/job/a-base", api.JobRegisterRequest{Job: e.job(ns, "a-base", gpu, `meta { rev = "2" }`)}},
		{"plan", "PUT", "/v1/job/a-base/plan", api.JobPlanRequest{Job: e.job(ns, "a-base", gpu, `meta { rev = "3" }`)}},
		{"scale", "POST", "/v1/job/a-base/scale?namespace=" + ns, api.ScalingRequest{Count: pointerTo(int64(1)),
			Target: map[string]string{"Group": "grp-a-base"}}},
		{"dispatch", "POST", "/v1/job/a-param/dispatch?namespace=" + ns, api.JobDispatchRequest{JobID: "a-param"}},
		{"revert", "POST", "/v1/job/a-base/revert?namespace=" + ns, api.JobRevertRequest{JobID: "a-base", JobVersion: 0}},
		{"periodic force", "POST", "/v1/job/a-cron/periodic/force?namespace=" + ns, nil},
	}
}

// TestE2E_ACL runs the governor in front of a Nomad with ACLs on: on
// every admission route and every /allot/v1 endpoint and /metrics, a
// tenant reads and changes only its own namespace, anonymous callers get
// nothing, and every refusal is a clear 4xx that names nothing of the
// other tenant (issue 11 item 4; audit #16, #27).
func TestE2E_ACL(t *testing.T) {
	start := time.Now()
	e := newACLEnv(t)
	t.Logf("cluster with ACLs and governor up in %s", time.Since(start).Round(time.Millisecond))
	e.seed()

	t.Run("admission routes", e.admissionRoutes)
	t.Run("allot api", e.allotAPI)
	t.Run("metrics", e.metrics)
	t.Run("a revoked token stops working within the cache TTL", e.revoked)
	t.Logf("TestE2E_ACL took %s", time.Since(start).Round(time.Millisecond))
}

// seed registers, through the governor with each tenant's own token, the
// jobs the routes act on, and a held job of team-b.
func (e *aclEnv) seed() {
	gpu := `device "nvidia/gpu" { count = 1 }`
	for _, ns := range []string{"team-a", "team-b"} {
		caller, p := "tenant-a", "a-"
		if ns == "team-b" {
			caller, p = "tenant-b", "b-"
		}
		for _, j := range []*api.Job{e.job(ns, p+"base", gpu, ""), e.job(ns, p+"param", "", "parameterized {}"),
			e.job(ns, p+"cron", "", "periodic {\n cron = \"0 0 1 1 *\"\n prohibit_overlap = true\n}")} {
			code, body := e.call(caller, "PUT", "/v1/jobs", api.JobRegisterRequest{Job: j})
			must.Eq(e.t, http.StatusOK, code, must.Sprintf("seeding %s/%s: %s", ns, *j.ID, body))
		}
	}
	code, body := e.call("tenant-b", "PUT", "/v1/jobs", api.JobRegisterRequest{Job: e.job("team-b", "b-big",
		`device "nvidia/gpu" { count = 2 }`, "")})
	must.Eq(e.t, http.StatusOK, code, must.Sprint(body))
	must.StrContains(e.t, body, "QUEUED", must.Sprint("team-b's big job is held: limit 2, 1 used"))
}

// secrets are what an answer to anyone but team-a's tenant must not show.
var teamASecrets = []string{"a-base", "a-param", "a-cron", "a-new", "grp-a", "uses ", "of limit", "of quota"}

func (e *aclEnv) admissionRoutes(t *testing.T) {
	for _, r := range e.routes("team-a") {
		t.Run(r.name, func(t *testing.T) {
			for _, caller := range []string{"tenant-b", "anonymous"} {
				before := e.jobs("team-a")
				code, body := e.call(caller, r.method, r.path, r.body)
				must.Eq(t, http.StatusForbidden, code, must.Sprintf("%s %s as %s: %s", r.method, r.path, caller, body))
				for _, s := range teamASecrets {
					must.StrNotContains(t, body, s, must.Sprintf("%s's refusal names %q", caller, s))
				}
				must.Eq(t, before, e.jobs("team-a"), must.Sprintf("%s changed team-a's jobs", caller))
			}
			code, body := e.call("tenant-a", r.method, r.path, r.body)
			must.Eq(t, http.StatusOK, code, must.Sprintf("team-a's own %s: %s", r.name, body))
		})
	}
	t.Run("audit #16: a huge scale is refused before admission, without the tenant's usage", func(t *testing.T) {
		huge := api.ScalingRequest{Count: pointerTo(int64(500)), Target: map[string]string{"Group": "grp-a-base"}}
		for _, caller := range []string{"tenant-b", "anonymous"} {
			code, body := e.call(caller, "POST", "/v1/job/a-base/scale?namespace=team-a", huge)
			must.Eq(t, http.StatusForbidden, code, must.Sprint(body))
			for _, s := range teamASecrets {
				must.StrNotContains(t, body, s)
			}
		}
		code, body := e.call("tenant-a", "POST", "/v1/job/a-base/scale?namespace=team-a", huge)
		must.Eq(t, http.StatusConflict, code, must.Sprint("the tenant itself learns why: "+body))
		must.StrContains(t, body, "team-a")
	})
	t.Run("reads passed to Nomad are Nomad's to refuse", func(t *testing.T) {
		for _, caller := range []string{"tenant-b", "anonymous"} {
			for _, path := range []string{"/v1/jobs?namespace=team-a", "/v1/job/a-base?namespace=team-a"} {
				code, body := e.call(caller, "GET", path, nil)
				must.Eq(t, http.StatusForbidden, code, must.Sprintf("%s as %s: %s", path, caller, body))
				must.StrNotContains(t, body, "grp-a")
			}
		}
		code, body := e.call("tenant-a", "GET", "/v1/job/a-base?namespace=team-a", nil)
		must.Eq(t, http.StatusOK, code, must.Sprint(body))
	})
	t.Run("namespace given only in the body, or disagreeing", func(t *testing.T) {
		j := e.job("team-a", "a-sneak", "", "")
		for _, path := range []string{"/v1/jobs", "/v1/jobs?namespace=team-b"} {
			code, body := e.call("tenant-b", "PUT", path, api.JobRegisterRequest{Job: j})
			must.Between(t, 400, code, 499, must.Sprintf("PUT %s: %s", path, body))
		}
		code, body := e.call("tenant-b", "POST", "/v1/job/a-param/dispatch",
			map[string]any{"JobID": "a-param", "Namespace": "team-a"})
		must.Between(t, 400, code, 499, must.Sprint(body))
		v, _ := e.version("team-a", "a-sneak")
		must.Eq(t, -1, v)
	})
}

func (e *aclEnv) allotAPI(t *testing.T) {
	// Wait for a cycle that has seen team-b's held job.
	e.c.Eventually(30*time.Second, "team-b's held job in the queue", func() error {
		if _, body := e.call("management", "GET", "/allot/v1/queue", nil); !strings.Contains(body, "b-big") {
			return fmt.Errorf("queue: %s", body)
		}
		return nil
	})
	own := map[string]string{"tenant-a": "team-a", "tenant-b": "team-b"}
	for caller, ns := range own {
		other := map[string]string{"team-a": "team-b", "team-b": "team-a"}[ns]
		t.Run(caller, func(t *testing.T) {
			for _, path := range []string{"/allot/v1/tenants", "/allot/v1/queue", "/allot/v1/decisions", "/allot/v1/classes"} {
				code, body := e.call(caller, "GET", path, nil)
				must.Eq(t, http.StatusOK, code, must.Sprintf("%s: %s", path, body))
				must.StrNotContains(t, body, other, must.Sprintf("%s shows %s to %s", path, other, caller))
			}
			_, tenants := e.call(caller, "GET", "/allot/v1/tenants", nil)
			must.StrContains(t, tenants, ns)
			code, body := e.call(caller, "GET", "/allot/v1/jobs/"+other+"/"+other[len("team-"):]+"-base/why", nil)
			must.Eq(t, http.StatusForbidden, code, must.Sprint(body))
			code, body = e.call(caller, "GET", "/allot/v1/jobs/"+other+"/no-such-job/why", nil)
			must.Eq(t, http.StatusForbidden, code, must.Sprint("a hidden job answers like a missing one: "+body))
		})
	}
	code, body := e.call("tenant-b", "GET", "/allot/v1/jobs/team-b/b-big/why", nil)
	must.Eq(t, http.StatusOK, code, must.Sprint(body))
	must.StrContains(t, body, `"State":"queued"`)
	_, body = e.call("tenant-b", "GET", "/allot/v1/queue", nil)
	must.StrContains(t, body, "b-big")
	for _, caller := range []string{"anonymous", "scrape"} {
		for _, path := range []string{"/allot/v1/tenants", "/allot/v1/queue", "/allot/v1/decisions", "/allot/v1/classes",
			"/allot/v1/jobs/team-b/b-big/why", "/allot/v1/usage", "/allot/v1/cost", "/allot/v1/capacity", "/allot/v1/audit"} {
			code, body := e.call(caller, "GET", path, nil)
			must.Eq(t, http.StatusForbidden, code, must.Sprintf("%s as %s: %s", path, caller, body))
			must.StrNotContains(t, body, "team-")
		}
	}
	e.tokens["forged"] = "00000000-0000-0000-0000-000000000000"
	code, body = e.call("forged", "GET", "/allot/v1/queue", nil)
	must.Eq(t, http.StatusForbidden, code)
	must.StrContains(t, body, "ACL token not found")
}

func (e *aclEnv) metrics(t *testing.T) {
	code, body := e.call("tenant-a", "GET", "/metrics", nil)
	must.Eq(t, http.StatusOK, code)
	must.StrContains(t, body, `allot_quota{kind="limit",namespace="team-a",resource="gpu"} 2`)
	must.StrNotContains(t, body, "team-b")
	must.StrNotContains(t, body, "go_goroutines")
	for _, caller := range []string{"scrape", "management"} {
		code, body := e.call(caller, "GET", "/metrics", nil)
		must.Eq(t, http.StatusOK, code)
		must.StrContains(t, body, `namespace="team-a"`)
		must.StrContains(t, body, `namespace="team-b"`)
		must.StrContains(t, body, "go_goroutines")
	}
	code, body = e.call("anonymous", "GET", "/metrics", nil)
	must.Eq(t, http.StatusForbidden, code)
	must.StrNotContains(t, body, "allot_")
}

func (e *aclEnv) revoked(t *testing.T) {
	tok := e.c.CreateToken("short-lived", "tenant-team-a")
	e.tokens["short"] = tok.SecretID
	code, _ := e.call("short", "GET", "/allot/v1/tenants", nil)
	must.Eq(t, http.StatusOK, code)
	e.c.DeleteToken(tok.AccessorID)
	revokedAt := time.Now()
	e.c.Eventually(15*time.Second, "the revoked token refused", func() error {
		if code, body := e.call("short", "GET", "/allot/v1/tenants", nil); code != http.StatusForbidden {
			return fmt.Errorf("still %d: %s", code, body)
		}
		return nil
	})
	t.Logf("revoked token refused %s after its deletion (cache TTL 2s)", time.Since(revokedAt).Round(time.Millisecond))
	must.Less(t, 5*time.Second, time.Since(revokedAt))
	code, body := e.call("short", "PUT", "/v1/jobs", api.JobRegisterRequest{Job: e.job("team-a", "a-late", "", "")})
	must.Eq(t, http.StatusForbidden, code, must.Sprint(body))
}
