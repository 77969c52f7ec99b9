package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/server"
)

// gpuNode is a ready node of pool "gpu" with n H200s.
func gpuNode(id string, n int) *api.Node {
	var inst []*api.NodeDevice
	for i := 0; i < n; i++ {
		inst = append(inst, &api.NodeDevice{ID: fmt.Sprintf("%s-gpu%d", id, i), Healthy: true})
	}
	return &api.Node{ID: id, Name: id, NodePool: "gpu", Status: api.NodeStatusReady, SchedulingEligibility: api.NodeSchedulingEligible,
		NodeResources: &api.NodeResources{Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H200", Instances: inst}}}}
}

// runningAlloc is a running allocation of ns/job holding n H200s on node.
func runningAlloc(id, ns, job, node string, n int) *api.Allocation {
	var ids []string
	for i := 0; i < n; i++ {
		ids = append(ids, fmt.Sprintf("%s-%d", id, i))
	}
	return &api.Allocation{ID: id, Namespace: ns, JobID: job, TaskGroup: "g", NodeID: node, DesiredStatus: "run", ClientStatus: "running",
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": {
			Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H200", DeviceIDs: ids}}}}},
		Job: &api.Job{ID: &job, Namespace: &ns}}
}

// heldJob is a job of ns asking for count × n H200s in pool gpu.
func heldJob(ns, id string, count, n int) *api.Job {
	pool, name := "gpu", "g"
	return &api.Job{ID: &id, Name: &id, Namespace: &ns, NodePool: &pool, TaskGroups: []*api.TaskGroup{{Name: &name, Count: &count,
		Tasks: []*api.Task{{Name: "t", Resources: &api.Resources{Devices: []*api.RequestedDevice{{Name: "nvidia/gpu/H200", Count: pointerTo(uint64(n))}}}}}}}}
}

func pointerTo[T any](v T) *T { return &v }

// liveCluster: pool gpu, two nodes of 4 H200s; ml runs 1 and secret runs
// 1 of them (2 of 8 in use); ml's "held" asks for 2 × 2 H200s.
func liveCluster(s *server.Server) {
	s.Store.Reset(&cluster.Initial{Nodes: []*api.Node{gpuNode("n1", 4), gpuNode("n2", 4)},
		Allocs: []*api.Allocation{runningAlloc("a1", "ml", "train", "n1", 1), runningAlloc("a2", "secret", "run", "n2", 1)},
		Jobs:   []*api.Job{heldJob("ml", "held", 2, 2)}})
}

// liveRow is the live row of pool gpu as the page renders it: capacity,
// allocated, idle, down, reserved-waiting.
func liveRow(capacity, allocated, idle, down, reserved int) string {
	return fmt.Sprintf(`<td>gpu</td><td>nvidia/gpu/H200</td><td>now</td>
<td class="num">%d</td><td class="num">%d</td>
<td class="num">%d</td><td class="num">%d</td>
<td class="num">%d</td>`, capacity, allocated, idle, down, reserved)
}

func TestOverviewShowsLivePoolsWithAnEmptyLedger(t *testing.T) {
	var db *ledger.DB
	srv, _ := newGovernor(t, testPlan(), false, false, withLedger(t, &db), liveCluster)
	for _, token := range []string{"ml", "root"} {
		b := newBrowser(t, srv)
		b.signIn(token)
		status, body, _ := b.get("/ui/")
		must.Eq(t, http.StatusOK, status)
		// The ledger has sampled nothing yet: the live figures stand alone.
		must.StrContains(t, body, liveRow(8, 2, 6, 0, 0), must.Sprint(token))
		must.StrContains(t, body, `aria-label="25% allocated, 75% idle, 0% down"`)
		must.StrNotContains(t, withoutTokens(body), "last 60 min (average)")
		must.StrNotContains(t, withoutTokens(body), "history unavailable")
	}
}

func TestOverviewWithoutLedgerSaysHistoryIsUnavailable(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false, liveCluster)
	b := newBrowser(t, srv)
	b.signIn("ml")
	_, body, _ := b.get("/ui/")
	must.StrContains(t, body, liveRow(8, 2, 6, 0, 0))
	must.StrContains(t, body, "No ledger: history unavailable")
	must.StrNotContains(t, withoutTokens(body), `<td class="num">0.0</td>`)
	must.StrNotContains(t, withoutTokens(body), "last 60 min (average)")
	_, body, _ = b.get("/ui/?lang=zh")
	must.StrContains(t, body, "<td>当前</td>")
	must.StrContains(t, body, "未配置账本（ledger）：历史数据不可用")
}

func TestOverviewReservedForTheStarvingHead(t *testing.T) {
	p := testPlan()
	p.Reservations = []engine.Reservation{{Job: "ml/held", Pool: "gpu", Nodes: []string{"n1", "n2"}}}
	srv, _ := newGovernor(t, p, false, false, liveCluster)
	b := newBrowser(t, srv)
	b.signIn("ml")
	_, body, _ := b.get("/ui/")
	must.StrContains(t, body, liveRow(8, 2, 6, 0, 4))
}

// TestOverviewShowsBorrowHolds: the overview lists the cohorts whose
// lending a starved queue head holds, beside the pools' reservations,
// filtered like the API: the head's name only for a token that may read
// its namespace. No hold, no table.
func TestOverviewShowsBorrowHolds(t *testing.T) {
	p := testPlan()
	p.BorrowHolds = []engine.BorrowHold{{Job: "secret/x", Cohort: "default", Start: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)}}
	srv, _ := newGovernor(t, p, false, false, liveCluster)
	b := newBrowser(t, srv)
	b.signIn("root")
	_, body, _ := b.get("/ui/")
	must.StrContains(t, body, "Lending held for starved queue heads")
	must.StrContains(t, body, `<td>default</td>
<td><a href="/ui/jobs/secret/x">secret/x</a></td>
<td>2026-11-30 14:00:00Z</td>`)

	b = newBrowser(t, srv)
	b.signIn("ml")
	_, body, _ = b.get("/ui/")
	must.StrContains(t, body, `<td>default</td>
<td>a job you may not read</td>`)
	must.StrNotContains(t, withoutTokens(body), "secret/x")
	_, body, _ = b.get("/ui/?lang=zh")
	must.StrContains(t, body, "为饥饿队首作业保留的出借额度")

	p.BorrowHolds[0].Start = time.Time{}
	b = newBrowser(t, srv)
	b.signIn("root")
	_, body, _ = b.get("/ui/")
	must.StrContains(t, body, `secret/x</a></td>
<td>unknown</td>`)

	srv, _ = newGovernor(t, testPlan(), false, false, liveCluster)
	b = newBrowser(t, srv)
	b.signIn("root")
	_, body, _ = b.get("/ui/")
	must.StrNotContains(t, withoutTokens(body), "holds-table")
}

// fakeCapacity answers /allot/v1/capacity over the requested hour: pool
// gpu (also live) and pool old (only in the ledger).
type fakeCapacity struct{}

func (fakeCapacity) Serve(kind string, w http.ResponseWriter, r *http.Request, _ ledger.Caller) {
	if kind != ledger.ReportCapacity {
		http.NotFound(w, r)
		return
	}
	since, until := time.Unix(1000, 0).UTC(), time.Unix(1000+3600, 0).UTC()
	_ = json.NewEncoder(w).Encode(ledger.CapacityAnswer{Since: since, Until: until, Pools: []ledger.Utilization{
		{Pool: "gpu", Model: "nvidia/gpu/H200", Capacity: 8 * 3600, Allocated: 4 * 3600, Idle: 3 * 3600, Down: 1 * 3600, Waiting: 2 * 3600},
		{Pool: "old", Model: "nvidia/gpu/A100", Capacity: 1800}}})
}

func TestOverviewShowsTheLastHourBesideNow(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false, func(s *server.Server) { s.Ledger = fakeCapacity{} }, liveCluster)
	b := newBrowser(t, srv)
	b.signIn("ml")
	status, body, _ := b.get("/ui/")
	must.Eq(t, http.StatusOK, status)
	for _, want := range []string{liveRow(8, 2, 6, 0, 0),
		`<td>gpu</td><td>nvidia/gpu/H200</td><td>last 60 min (average)</td>
<td class="num">8.0</td><td class="num">4.0</td>
<td class="num">3.0</td><td class="num">1.0</td>
<td class="num">2.0</td>`,
		// A pool the ledger still remembers gets its history row alone.
		`<td>old</td><td>nvidia/gpu/A100</td><td>last 60 min (average)</td>
<td class="num">0.5</td>`,
		`<rect class="b-idle" x="25.00" y="0" width="75.00"`} {
		must.StrContains(t, body, want)
	}
	must.Eq(t, 1, strings.Count(body, "<td>now</td>"))
	must.StrNotContains(t, withoutTokens(body), "history unavailable")
	// Top tenants: only ml is readable; its dominant share.
	must.StrContains(t, body, `<td class="num">50.0%</td>`)
	must.StrNotContains(t, withoutTokens(body), "secret")
}

func TestOverviewPoolsAreTheSameForEveryTokenAndTenantsStayFiltered(t *testing.T) {
	srv, _ := newGovernor(t, testPlan(), false, false, liveCluster)
	b := newBrowser(t, srv)
	b.signIn("ml")
	_, body, _ := b.get("/ui/")
	// secret's running allocation counts in the pool's totals, but
	// nothing names secret or its job.
	must.StrContains(t, body, liveRow(8, 2, 6, 0, 0))
	for _, hidden := range []string{"secret", ">run<", "a2"} {
		must.StrNotContains(t, withoutTokens(body), hidden)
	}
	ops := newBrowser(t, srv)
	ops.signIn("root")
	_, body, _ = ops.get("/ui/")
	must.StrContains(t, body, liveRow(8, 2, 6, 0, 0))
	must.StrContains(t, body, `<a href="/ui/tenants/secret">secret</a>`)
}
