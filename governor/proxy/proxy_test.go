package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/auth"
	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/hahttp"
	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/governor/quota"
	"github.com/allot-sh/allot/governor/reconcile"
)

// fakeNomad records what reaches Nomad and answers like it.
type fakeNomad struct {
	mu     sync.Mutex
	bodies map[string][]byte
	tokens []string
	status int
	// jobJSON answers GET /v1/job/<id> when set.
	jobJSON string
	// versionsJSON answers GET /v1/job/<id>/versions when set.
	versionsJSON string
	// dispatched counts dispatches (each child gets its own ID).
	dispatched int
	// failWrites, when set, answers every PUT/POST with this status.
	failWrites int
	// epochs records the X-Allot-Epoch header of every request (HA).
	epochs []string
}

func (f *fakeNomad) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies[r.Method+" "+r.URL.Path] = body
	f.tokens = append(f.tokens, r.Header.Get("X-Nomad-Token"))
	f.epochs = append(f.epochs, r.Header.Get(hahttp.EpochHeader))
	status := f.status
	if f.failWrites != 0 && r.Method != "GET" {
		status = f.failWrites
	}
	f.mu.Unlock()
	switch {
	case status != 0:
		http.Error(w, "Permission denied", status)
	case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/versions") && f.versionsJSON != "":
		_, _ = io.WriteString(w, f.versionsJSON)
	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/v1/job/") && f.jobJSON != "":
		_, _ = io.WriteString(w, f.jobJSON)
	case r.URL.Path == "/v1/event/stream":
		fl := w.(http.Flusher)
		_, _ = io.WriteString(w, "{\"Index\":1,\"Events\":[]}\n")
		fl.Flush()
		<-r.Context().Done()
	case strings.HasSuffix(r.URL.Path, "/dispatch"):
		f.mu.Lock()
		f.dispatched++
		n := f.dispatched
		f.mu.Unlock()
		_, _ = fmt.Fprintf(w, `{"DispatchedJobID":"param/dispatch-%d","EvalID":"e2","JobCreateIndex":%d}`, n, 49+n)
	case strings.HasSuffix(r.URL.Path, "/plan"):
		_, _ = io.WriteString(w, `{"Diff":null,"Warnings":"nomad says hi"}`)
	case r.Method == "PUT" || r.Method == "POST":
		_, _ = io.WriteString(w, `{"EvalID":"e1","JobModifyIndex":42,"Warnings":""}`)
	default:
		_, _ = io.WriteString(w, `[]`)
	}
}

func (f *fakeNomad) body(key string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[key]
}

type fixture struct {
	nomad  *fakeNomad
	srv    *httptest.Server
	store  *cluster.Store
	sealer *jobmeta.Sealer
	auth   *fakeAuth
	proxy  *Proxy
}

// fakeAuth allows what allow lists ("ns capability") for the token
// "caller-secret", and records what it was asked.
type fakeAuth struct {
	mu    sync.Mutex
	deny  bool
	asked []string
}

func (a *fakeAuth) Authorize(secret, ns string, caps []string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, secret+" "+ns+" "+strings.Join(caps, "|"))
	if a.deny || secret != "caller-secret" {
		return "", auth.ErrPermissionDenied
	}
	return "accessor-1", nil
}

func (a *fakeAuth) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// newFixture runs a proxy in front of a fake Nomad with one GPU node and a
// tenant "ml" limited to 4 GPUs, 4 of them in use by a running job.
func newFixture(t testing.TB, ready bool) *fixture {
	fn := &fakeNomad{bodies: map[string][]byte{}}
	nomad := httptest.NewServer(fn)
	t.Cleanup(nomad.Close)
	book := quota.NewBook([]string{"standard", "high"})
	store := cluster.NewStore(book, nil)
	if ready {
		store.SetNamespaces([]*api.Namespace{{Name: "default"}, {Name: "ml", Meta: map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "4"}}})
		store.Reset(&cluster.Initial{Nodes: []*api.Node{gpuNode()}, Allocs: []*api.Allocation{gpuAlloc()}})
	}
	sealer, err := jobmeta.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	must.NoError(t, err)
	store.UseSealer(sealer)
	rec := &reconcile.Reconciler{Store: store, Now: time.Now, Log: hclog.NewNullLogger(), Config: engine.Config{
		StarvationTimeout: time.Minute, Classes: map[string]engine.Class{"standard": {Priority: 50}, "high": {Priority: 70},
			"production": {Priority: 90, Restricted: true}}}}
	target, _ := url.Parse(nomad.URL)
	f := &fixture{nomad: fn, store: store, sealer: sealer, auth: &fakeAuth{}}
	p := New(Options{Target: target, Reconciler: rec, Store: store, Log: hclog.NewNullLogger(), Book: book, Sealer: sealer,
		Auth: f.auth, Governed: func(ns string) bool { _, ok := book.Get(ns); return ok }, MaxBody: 1 << 20, MaxInFlight: 4})
	f.proxy = p
	f.srv = httptest.NewServer(p)
	t.Cleanup(f.srv.Close)
	return f
}

func gpuNode() *api.Node {
	return &api.Node{ID: "n1", Name: "n1", NodePool: "gpu", Datacenter: "dc1", Status: "ready", SchedulingEligibility: "eligible",
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 8000}, Memory: api.NodeMemoryResources{MemoryMB: 8192},
			Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H200", Instances: []*api.NodeDevice{
				{ID: "0", Healthy: true}, {ID: "1", Healthy: true}, {ID: "2", Healthy: true}, {ID: "3", Healthy: true},
				{ID: "4", Healthy: true}, {ID: "5", Healthy: true}, {ID: "6", Healthy: true}, {ID: "7", Healthy: true}}}}}}
}

func gpuAlloc() *api.Allocation {
	return &api.Allocation{ID: "a1", Namespace: "ml", JobID: "running", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", ClientStatus: "running",
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": {
			Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H200", DeviceIDs: []string{"0", "1"}}}}}}}
}

// registerBody is a register request with fields the proxy does not know,
// which must reach Nomad unchanged.
func registerBody(ns, id string, gpus int) string {
	return `{"FutureTopLevel":7,"Job":{"ID":"` + id + `","Name":"` + id + `","Namespace":"` + ns + `","Type":"batch","NodePool":"gpu",
"FutureJobField":{"x":1},"Meta":{"owner":"ana"},
"TaskGroups":[{"Name":"g","Count":1,"Tasks":[{"Name":"t","Driver":"raw_exec","Resources":{"CPU":100,"MemoryMB":64,
"Devices":[{"Name":"nvidia/gpu","Count":` + itoa(gpus) + `}]}}]}]}}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func put(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("PUT", url, strings.NewReader(body))
	must.NoError(t, err)
	req.Header.Set("X-Nomad-Token", "caller-secret")
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(data, &out)
	if out == nil {
		out = map[string]any{"raw": string(data)}
	}
	return resp.StatusCode, out
}

func forwardedJob(t *testing.T, f *fixture, key string) map[string]any {
	var body map[string]any
	must.NoError(t, json.Unmarshal(f.nomad.body(key), &body))
	must.Eq(t, float64(7), body["FutureTopLevel"].(float64))
	job := body["Job"].(map[string]any)
	must.NotNil(t, job["FutureJobField"])
	return job
}

func TestRegisterAdmitted(t *testing.T) {
	f := newFixture(t, true)
	status, out := put(t, f.srv.URL+"/v1/jobs", registerBody("ml", "Train_v1.2", 2))
	must.Eq(t, 200, status)
	must.StrContains(t, out["Warnings"].(string), "allot: job ml/Train_v1.2 admitted (class standard, priority 50)")
	job := forwardedJob(t, f, "PUT /v1/jobs")
	must.Eq(t, false, job["Stop"].(bool))
	must.Eq(t, float64(50), job["Priority"].(float64))
	meta := job["Meta"].(map[string]any)
	must.Eq(t, "admitted", meta["allot.state"].(string))
	must.Eq(t, "ana", meta["owner"].(string))
	must.Eq(t, []string{"caller-secret"}, f.nomad.tokens, must.Sprint("the caller's token, and only it"))
	j, ok := f.store.Job("ml", "Train_v1.2")
	must.True(t, ok)
	must.Eq(t, engine.Admitted, j.State)
	must.Eq(t, uint64(42), j.Version)
}

func TestRegisterQueued(t *testing.T) {
	f := newFixture(t, true)
	status, out := put(t, f.srv.URL+"/v1/job/big.One_A", registerBody("ml", "big.One_A", 4))
	must.Eq(t, 200, status)
	w := out["Warnings"].(string)
	must.StrContains(t, w, "allot: job ml/big.One_A is QUEUED (held, not running): position 1 of 1 in the queue, 1 in tenant ml.")
	must.StrContains(t, w, "reason: limit: needs 4 gpu; tenant ml uses 2 of limit 4")
	job := forwardedJob(t, f, "PUT /v1/job/big.One_A")
	must.Eq(t, true, job["Stop"].(bool))
	must.Eq(t, "queued", job["Meta"].(map[string]any)["allot.state"].(string))
}

func TestUngovernedPassesUnchanged(t *testing.T) {
	f := newFixture(t, true)
	body := registerBody("default", "web", 1)
	status, _ := put(t, f.srv.URL+"/v1/jobs", body)
	must.Eq(t, 200, status)
	must.Eq(t, body, string(f.nomad.body("PUT /v1/jobs")))
}

func TestRefusesAdmissionUntilSynced(t *testing.T) {
	f := newFixture(t, false)
	status, out := put(t, f.srv.URL+"/v1/jobs", registerBody("ml", "x", 1))
	must.Eq(t, 503, status)
	must.StrContains(t, out["raw"].(string), "starting up")
	must.Nil(t, f.nomad.body("PUT /v1/jobs"), must.Sprint("nothing reached Nomad"))
}

func TestNomadErrorsPassThrough(t *testing.T) {
	f := newFixture(t, true)
	f.nomad.status = 403
	status, out := put(t, f.srv.URL+"/v1/jobs", registerBody("ml", "x", 1))
	must.Eq(t, 403, status)
	must.StrContains(t, out["raw"].(string), "Permission denied")
}

func TestPlanPreview(t *testing.T) {
	f := newFixture(t, true)
	body := registerBody("ml", "big", 4)
	status, out := put(t, f.srv.URL+"/v1/job/big/plan", body)
	must.Eq(t, 200, status)
	must.Eq(t, body, string(f.nomad.body("PUT /v1/job/big/plan")))
	must.StrContains(t, out["Warnings"].(string), "nomad says hi\n(plan preview) allot: job ml/big is QUEUED")
	_, stored := f.store.Job("ml", "big")
	must.False(t, stored, must.Sprint("a plan registers nothing"))
}

func TestScale(t *testing.T) {
	f := newFixture(t, true)
	f.admitted(t, runningJob())
	status, out := put(t, f.srv.URL+"/v1/job/running/scale?namespace=ml", `{"Count":3,"Target":{"Group":"g"}}`)
	must.Eq(t, 409, status)
	must.StrContains(t, out["raw"].(string), `scaling ml/running group "g" to 3 is not admitted now (nothing was changed): limit: needs`)
	must.Nil(t, f.nomad.body("PUT /v1/job/running/scale"), must.Sprint("nothing reached Nomad"))
	status, _ = put(t, f.srv.URL+"/v1/job/running/scale?namespace=ml", `{"Count":2,"Target":{"Group":"g"}}`)
	must.Eq(t, 200, status)
}

func TestEventStreamIsStreamed(t *testing.T) {
	f := newFixture(t, true)
	resp, err := http.Get(f.srv.URL + "/v1/event/stream?topic=*")
	must.NoError(t, err)
	defer resp.Body.Close()
	// The fake never ends the stream: reading a line proves it is flushed
	// through while the request is still open.
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	must.NoError(t, err)
	must.True(t, bytes.Contains(line, []byte(`"Index":1`)))
}

func paramJob(gpus uint64) *api.Job {
	return &api.Job{ID: pointer("param"), Namespace: pointer("ml"), NodePool: pointer("gpu"), JobModifyIndex: pointer(uint64(5)),
		ParameterizedJob: &api.ParameterizedJobConfig{}, TaskGroups: []*api.TaskGroup{{Name: pointer("g"), Count: pointer(1),
			Tasks: []*api.Task{{Name: "t", Resources: &api.Resources{Devices: []*api.RequestedDevice{{Name: "gpu", Count: pointer(gpus)}}}}}}}}
}

func TestDispatchOverTheLimitIsRefused(t *testing.T) {
	f := newFixture(t, true)
	f.stored(t, paramJob(4))
	status, out := put(t, f.srv.URL+"/v1/job/param/dispatch?namespace=ml", `{"Meta":{}}`)
	must.Eq(t, 409, status)
	must.StrContains(t, out["raw"].(string), "dispatching ml/param is not admitted now")
	must.StrContains(t, out["raw"].(string), "limit: needs 4 gpu; tenant ml uses 2 of limit 4")
	must.Nil(t, f.nomad.body("PUT /v1/job/param/dispatch"), must.Sprint("nothing reached Nomad"))
}

func TestDispatchReadsAParentTheStoreDoesNotKnowYet(t *testing.T) {
	f := newFixture(t, true)
	f.nomad.jobJSON = `{"ID":"param","Namespace":"ml","NodePool":"gpu","JobModifyIndex":5,"ParameterizedJob":{},
"TaskGroups":[{"Name":"g","Count":1,"Tasks":[{"Name":"t","Resources":{"Devices":[{"Name":"gpu","Count":4}]}}]}]}`
	status, out := put(t, f.srv.URL+"/v1/job/param/dispatch?namespace=ml", `{}`)
	must.Eq(t, 409, status, must.Sprint(out))
	must.Eq(t, []string{"caller-secret"}, f.nomad.tokens, must.Sprint("the parent was read with the caller's token"))
}

func TestDispatchThatFitsIsForwarded(t *testing.T) {
	f := newFixture(t, true)
	f.stored(t, paramJob(1))
	status, out := put(t, f.srv.URL+"/v1/job/param/dispatch?namespace=ml", `{}`)
	must.Eq(t, 200, status)
	must.Eq(t, "param/dispatch-1", out["DispatchedJobID"].(string))
	must.Eq(t, []string{"caller-secret", "caller-secret"}, f.nomad.tokens, must.Sprint("the parent read and the dispatch, both with the caller's token"))
}

// stored makes the fake Nomad answer GET /v1/job/<id> with j, as Nomad
// stores it.
func (f *fixture) stored(t *testing.T, j *api.Job) {
	t.Helper()
	data, err := json.Marshal(j)
	must.NoError(t, err)
	f.nomad.mu.Lock()
	f.nomad.jobJSON = string(data)
	f.nomad.mu.Unlock()
}

// admitted stores j in Nomad and in the governor's store as a job the
// governor admitted (sealed).
func (f *fixture) admitted(t *testing.T, j *api.Job) {
	t.Helper()
	now := time.Now()
	must.NoError(t, f.sealer.Admit(j, jobmeta.Record{}, jobmeta.Stamp{Now: now}))
	sub := now.UnixNano()
	j.SubmitTime = &sub
	f.store.UpsertJob(j)
	f.stored(t, j)
}
