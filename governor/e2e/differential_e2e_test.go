//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/proxy"
	"github.com/allot-sh/allot/internal/testcluster"
)

// diffSeed fixes the generated bodies; set ALLOT_DIFF_SEED to try others.
const diffSeed = 20261130

// TestE2E_DifferentialJudgeVsNomad registers generated job bodies through
// the governor into a real Nomad 1.6.1 and checks, for each, that what the
// governor judged (proxy.Judge: the register route's decoding, namespace
// resolution, canonicalization) equals what Nomad stored, read back and
// converted the same way, in the namespace the governor named; or that
// the request was refused and Nomad stored nothing. The bodies vary
// device blocks with and without count, scaling, several groups, periodic
// and parameterized parents, key casing, extra top-level members,
// trailing data after the first JSON value, and where the namespace is
// given (query, body, job, several agreeing or not).
func TestE2E_DifferentialJudgeVsNomad(t *testing.T) {
	start := time.Now()
	dir := t.TempDir()
	inv := writeInventory(t, dir, "gpu-1", 4)
	c := testcluster.New(t, testcluster.Options{Plugins: []string{"nomad-device-accel"}, Clients: []testcluster.ClientSpec{{
		Name: "gpu-1", NodePool: "gpu", PluginConfig: map[string]string{"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv)},
		Ready: testcluster.HasDevices("nvidia/gpu/H200", 4)}}})
	_, err := c.API.Namespaces().Register(&api.Namespace{Name: "ml", Meta: map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "8"}}, nil)
	must.NoError(t, err)
	_, err = c.API.Namespaces().Register(&api.Namespace{Name: "tiny", Meta: map[string]string{"allot.quota.gpu": "1", "allot.limit.gpu": "1"}}, nil)
	must.NoError(t, err)
	cfg := filepath.Join(dir, "governor.hcl")
	must.NoError(t, os.WriteFile(cfg, []byte("cycle_interval = \"2s\"\n"), 0o644))
	g := c.StartGovernor("-config", cfg)
	t.Logf("cluster and governor up in %s", time.Since(start).Round(time.Millisecond))

	seed := int64(diffSeed)
	if s := os.Getenv("ALLOT_DIFF_SEED"); s != "" {
		_, _ = fmt.Sscan(s, &seed)
	}
	gen := &bodyGen{r: rand.New(rand.NewSource(seed))}
	var stats struct{ stored, byGovernor, byNomad int }
	for i := 0; i < 220; i++ {
		b := gen.next(i)
		switch outcome := diffOne(t, c, g.Addr, b); outcome {
		case "stored":
			stats.stored++
		case "governor":
			stats.byGovernor++
		default:
			stats.byNomad++
		}
	}
	for _, ns := range []string{"ml", "default"} {
		_, _, err := c.API.Jobs().Info("evil", &api.QueryOptions{Namespace: ns})
		must.Error(t, err, must.Sprint("data after the first JSON value is never registered"))
	}
	t.Logf("seed %d: %d bodies stored as judged, %d refused by the governor, %d refused by Nomad; %s in all",
		seed, stats.stored, stats.byGovernor, stats.byNomad, time.Since(start).Round(time.Millisecond))
	must.Greater(t, 150, stats.stored, must.Sprint("most generated bodies are valid jobs"))
	must.Greater(t, 10, stats.byGovernor, must.Sprint("the disagreeing namespaces are refused"))

	t.Run("forcing an evaluation of a held job starts nothing", func(t *testing.T) { evaluateHeld(t, c, g.Addr) })
	t.Run("a periodic force over the limit launches nothing", func(t *testing.T) { forceOverLimit(t, c, g.Addr) })
}

// sleepJob is a register body for a 2-GPU batch job that fits the node.
func sleepJob(id, ns string, periodic bool) string {
	extra := ""
	if periodic {
		extra = `"Periodic":{"Spec":"0 0 1 1 *","SpecType":"cron"},`
	}
	return `{"Job":{"ID":"` + id + `","Namespace":"` + ns + `","Type":"batch","NodePool":"gpu",` + extra + `"TaskGroups":[{"Name":"g","Count":1,
"Tasks":[{"Name":"t","Driver":"raw_exec","Config":{"command":"/bin/sleep","args":["1"]},
"Resources":{"CPU":100,"MemoryMB":64,"Devices":[{"Name":"nvidia/gpu","Count":2}]}}]}]}}`
}

func putGov(t *testing.T, gov, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("PUT", gov+path, strings.NewReader(body))
	must.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// evaluateHeld: POST /v1/job/<id>/evaluate passes the proxy; Nomad
// evaluates the stored, stopped version, so a held job gets no allocation.
// The control job of the same shape in a namespace with room runs (at
// once, or after the next cycle while earlier jobs of its pool wait).
func evaluateHeld(t *testing.T, c *testcluster.Cluster, gov string) {
	status, out := putGov(t, gov, "/v1/jobs", sleepJob("held-2gpu", "tiny", false))
	must.Eq(t, 200, status, must.Sprint(out))
	must.StrContains(t, out, "allot: job tiny/held-2gpu is QUEUED")
	status, out = putGov(t, gov, "/v1/job/held-2gpu/evaluate?namespace=tiny", `{"JobID":"held-2gpu"}`)
	must.Eq(t, 200, status, must.Sprint(out))
	var ev struct{ EvalID string }
	must.NoError(t, json.Unmarshal([]byte(out), &ev))
	c.Eventually(30*time.Second, "the forced evaluation completes", func() error {
		e, _, err := c.API.Evaluations().Info(ev.EvalID, &api.QueryOptions{Namespace: "tiny"})
		if err != nil {
			return err
		}
		if e.Status != api.EvalStatusComplete {
			return fmt.Errorf("evaluation %s", e.Status)
		}
		return nil
	})
	allocs, _, err := c.API.Jobs().Allocations("held-2gpu", true, &api.QueryOptions{Namespace: "tiny"})
	must.NoError(t, err)
	must.SliceEmpty(t, allocs, must.Sprint("a held job stays without allocations"))

	status, out = putGov(t, gov, "/v1/jobs", sleepJob("control-2gpu", "ml", false))
	must.Eq(t, 200, status, must.Sprint(out))
	// Admitted at once, or, while earlier jobs of its pool wait for
	// capacity, left to the next cycle (engine Plan.HeldBackBy), which
	// admits it: either way it runs.
	if !strings.Contains(out, "allot: job ml/control-2gpu admitted") {
		must.StrContains(t, out, "wait for capacity", must.Sprint("held only for the next cycle"))
	}
	c.WaitForAlloc("ml", "control-2gpu", 60*time.Second, func(*api.AllocationListStub) error { return nil })
}

// forceOverLimit: a periodic parent's forced launch is admitted as the
// child it creates; over the tenant's limit it is refused and no child
// appears.
func forceOverLimit(t *testing.T, c *testcluster.Cluster, gov string) {
	status, out := putGov(t, gov, "/v1/jobs", sleepJob("cron-2gpu", "tiny", true))
	must.Eq(t, 200, status, must.Sprint(out))
	status, out = putGov(t, gov, "/v1/job/cron-2gpu/periodic/force?namespace=tiny", ``)
	must.Eq(t, http.StatusConflict, status, must.Sprint(out))
	must.StrContains(t, out, "launching a child of tiny/cron-2gpu now is not admitted now")
	jobs, _, err := c.API.Jobs().PrefixList("cron-2gpu/")
	must.NoError(t, err)
	must.SliceEmpty(t, jobs, must.Sprint("no child was launched"))
}

// diffBody is one generated request.
type diffBody struct {
	path, id string
	body     []byte
	// refuse: the governor must refuse it (namespaces disagree).
	refuse bool
	// governed: Nomad will store it in the governed namespace ml.
	governed bool
}

// diffOne sends b through the governor and checks the outcome; it
// returns "stored", "governor" (refused by the governor) or "nomad".
func diffOne(t *testing.T, c *testcluster.Cluster, gov string, b diffBody) string {
	t.Helper()
	req, err := http.NewRequest("PUT", gov+b.path, bytes.NewReader(b.body))
	must.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	what := fmt.Sprintf("PUT %s %s\n-> %d %s", b.path, b.body, resp.StatusCode, data)
	judgeReq := httptest.NewRequest("PUT", b.path, nil)
	judged, jerr := proxy.Judge(judgeReq, b.body, strings.TrimPrefix(strings.SplitN(b.path, "?", 2)[0], "/v1/job/"), "")
	if strings.HasPrefix(b.path, "/v1/jobs") {
		judged, jerr = proxy.Judge(judgeReq, b.body, "", "")
	}
	if resp.StatusCode != http.StatusOK {
		for _, ns := range []string{"ml", "default"} {
			_, _, err := c.API.Jobs().Info(b.id, &api.QueryOptions{Namespace: ns})
			must.Error(t, err, must.Sprintf("a refused request stored nothing in %s: %s", ns, what))
		}
		if strings.HasPrefix(string(data), "allot-governor:") {
			must.Error(t, jerr, must.Sprintf("the governor refused what Judge accepts: %s", what))
			if !b.refuse {
				t.Logf("refused by the governor: %s", data)
			}
			return "governor"
		}
		must.False(t, b.refuse, must.Sprintf("the governor must refuse this itself: %s", what))
		t.Logf("refused by Nomad: %d %s", resp.StatusCode, data)
		return "nomad"
	}
	must.False(t, b.refuse, must.Sprint(what))
	must.NoError(t, jerr, must.Sprint(what))
	ns := *judged.Namespace
	if b.governed {
		must.Eq(t, "ml", ns, must.Sprint(what))
		if !judged.IsPeriodic() && !judged.IsParameterized() {
			must.StrContains(t, string(data), "allot: job ml/"+b.id, must.Sprint(what))
		}
	}
	stored, _, err := c.API.Jobs().Info(b.id, &api.QueryOptions{Namespace: ns})
	must.NoError(t, err, must.Sprintf("stored in the namespace the governor judged: %s", what))
	// An admission carries the governor's placement pin, recorded in
	// allot.pin: Nomad stores the judged job plus exactly that constraint
	// per pinned group.
	if pin := jobmeta.Parse(stored.Meta).Pin; pin != nil {
		must.Eq(t, jobmeta.StateAdmitted, stored.Meta[jobmeta.State], must.Sprint(what))
		must.True(t, jobmeta.RemovePin(stored, pin), must.Sprint(what))
	}
	must.Eq(t, shapeOf(judged), shapeOf(stored), must.Sprint(what))
	return "stored"
}

// diffShape is what admission reads of a job, converted as the governor
// converts jobs.
type diffShape struct {
	Namespace, ID, Pool, Class string
	Periodic, Parameterized    bool
	Constraints                []engine.Constraint
	Groups                     []engine.Group
}

func shapeOf(j *api.Job) diffShape {
	e := cluster.ConvertJob(j)
	return diffShape{Namespace: e.Namespace, ID: e.ID, Pool: e.NodePool, Class: e.Class, Periodic: j.IsPeriodic(),
		Parameterized: j.IsParameterized(), Constraints: e.Constraints, Groups: e.Groups}
}

// bodyGen generates register requests.
type bodyGen struct{ r *rand.Rand }

func (g *bodyGen) pick(p float64) bool { return g.r.Float64() < p }

// key spells a field name as Nomad's decoder accepts it: usually as
// declared, sometimes lower or upper case.
func (g *bodyGen) key(k string) string {
	switch g.r.Intn(10) {
	case 0:
		return strings.ToLower(k)
	case 1:
		return strings.ToUpper(k)
	}
	return k
}

func (g *bodyGen) next(i int) diffBody {
	id := fmt.Sprintf("diff-%03d", i)
	if g.pick(0.2) {
		id = fmt.Sprintf("Diff.Job_%d", i)
	}
	job := map[string]any{g.key("ID"): id, g.key("Type"): "batch", g.key("NodePool"): "gpu",
		// Never fits: the governor holds every job, so nothing runs.
		g.key("Constraints"): []any{map[string]any{"LTarget": "${meta.allot_differential}", "RTarget": "never", "Operand": "="}},
		g.key("TaskGroups"):  g.groups()}
	if g.pick(0.3) {
		job[g.key("Meta")] = map[string]any{"note": "x", "allot.state": "admitted", "allot.class": []string{"standard", "high"}[g.r.Intn(2)]}
	}
	switch g.r.Intn(10) {
	case 0:
		job[g.key("Periodic")] = map[string]any{"Spec": "0 0 1 1 *", "SpecType": "cron"}
	case 1:
		job[g.key("ParameterizedJob")] = map[string]any{"Payload": "optional"}
	}
	top := map[string]any{}
	b := diffBody{id: id, path: "/v1/jobs", governed: true}
	if g.pick(0.5) {
		b.path = "/v1/job/" + id
	}
	switch g.r.Intn(6) {
	case 0:
		job[g.key("Namespace")] = "ml"
	case 1:
		b.path += "?namespace=ml"
	case 2:
		top[g.key("Namespace")] = "ml"
	case 3:
		job[g.key("Namespace")], top[g.key("Namespace")] = "ml", "ml"
		b.path += "?namespace=ml"
	case 4:
		job[g.key("Namespace")] = "default"
		b.path += "?namespace=ml"
		b.refuse = true
	case 5:
		job[g.key("Namespace")], b.governed = "default", false
	}
	if g.pick(0.3) {
		top["FutureTopLevel"] = map[string]any{"x": 1}
	}
	top[g.key("Job")] = job
	data, _ := json.Marshal(top)
	switch g.r.Intn(6) {
	case 0:
		data = append(data, " x"...)
	case 1:
		data = append(data, "\n{\"Job\":{\"ID\":\"evil\",\"Namespace\":\"ml\"}}"...)
	}
	b.body = data
	return b
}

func (g *bodyGen) groups() []any {
	var out []any
	for gi := 0; gi <= g.r.Intn(3); gi++ {
		grp := map[string]any{g.key("Name"): fmt.Sprintf("g%d", gi)}
		if !g.pick(0.3) {
			grp[g.key("Count")] = g.r.Intn(4)
		}
		if g.pick(0.2) {
			min := g.r.Intn(3)
			grp[g.key("Scaling")] = map[string]any{"Min": min, "Max": 5, "Enabled": false}
		}
		var tasks []any
		for ti := 0; ti <= g.r.Intn(2); ti++ {
			tasks = append(tasks, g.task(ti))
		}
		grp[g.key("Tasks")] = tasks
		out = append(out, grp)
	}
	return out
}

func (g *bodyGen) task(i int) map[string]any {
	t := map[string]any{g.key("Name"): fmt.Sprintf("t%d", i), g.key("Driver"): "raw_exec", "Config": map[string]any{"command": "/bin/true"}}
	if g.pick(0.2) {
		return t
	}
	res := map[string]any{g.key("CPU"): 50 + g.r.Intn(150), g.key("MemoryMB"): 32 + g.r.Intn(96)}
	if g.pick(0.6) {
		dev := map[string]any{"Name": []string{"nvidia/gpu", "gpu", "nvidia/gpu/H200"}[g.r.Intn(3)]}
		if g.pick(0.6) {
			dev[g.key("Count")] = 1 + g.r.Intn(2)
		}
		res[g.key("Devices")] = []any{dev}
	}
	t[g.key("Resources")] = res
	return t
}
