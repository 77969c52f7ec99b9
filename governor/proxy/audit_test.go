package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// Regression tests for the proxy side of ../shared/design/SECURITY-AUDIT.md.
// The fixture's tenant ml has a GPU limit of 4 with 2 in use.

// job renders a job member: ns "" leaves Namespace out; group and task
// are raw JSON members added to the group and the task ("" for none).
func job(id, ns, group, task string) string {
	nsField := ""
	if ns != "" {
		nsField = `"Namespace":"` + ns + `",`
	}
	if group != "" {
		group += ","
	}
	if task != "" {
		task = "," + task
	}
	return `{"ID":"` + id + `",` + nsField + `"Type":"batch","NodePool":"gpu","TaskGroups":[{"Name":"g",` + group +
		`"Tasks":[{"Name":"t","Driver":"raw_exec"` + task + `}]}]}`
}

// gpus is a task's resources member asking for a device; count "" leaves
// the device's Count out.
func gpus(count string) string {
	c := ""
	if count != "" {
		c = `,"Count":` + count
	}
	return `"Resources":{"CPU":100,"MemoryMB":64,"Devices":[{"Name":"nvidia/gpu"` + c + `}]}`
}

// sentJob is the Job member of what reached Nomad on key.
func sentJob(t *testing.T, f *fixture, key string) map[string]any {
	t.Helper()
	data := f.nomad.body(key)
	must.NotNil(t, data, must.Sprint("the request reached Nomad"))
	var body map[string]any
	must.NoError(t, json.Unmarshal(data, &body), must.Sprintf("Nomad got one JSON value: %s", data))
	return body["Job"].(map[string]any)
}

func metaOf(j map[string]any) map[string]any {
	m, _ := j["Meta"].(map[string]any)
	return m
}

func TestAudit2_TrailingBytesAreJudged(t *testing.T) {
	f := newFixture(t, true)
	body := `{"Job":` + job("big", "ml", "", gpus("8")) + `}x`
	status, out := put(t, f.srv.URL+"/v1/jobs", body)
	must.Eq(t, 200, status)
	must.StrContains(t, out["Warnings"].(string), "allot: job ml/big is QUEUED")
	j := sentJob(t, f, "PUT /v1/jobs")
	must.Eq(t, true, j["Stop"].(bool), must.Sprint("held, not passed through"))
	must.Eq(t, "queued", metaOf(j)["allot.state"].(string))
	must.False(t, strings.HasSuffix(string(f.nomad.body("PUT /v1/jobs")), "x"), must.Sprint("what Nomad ignores is not sent"))
}

// The example: forged governor meta and a class the tenant may
// not use, with a trailing byte.
func TestAudit2_ForgedStateAndRestrictedClassRefused(t *testing.T) {
	f := newFixture(t, true)
	member := strings.Replace(job("big", "ml", "", gpus("8")), `"Type"`, `"Meta":{"allot.state":"admitted","allot.class":"production"},"Type"`, 1)
	status, out := put(t, f.srv.URL+"/v1/jobs", `{"Job":`+member+`} `+"\x01")
	must.Eq(t, http.StatusBadRequest, status)
	must.StrContains(t, out["raw"].(string), `class "production" may not be used by tenant ml; classes tenant ml may use: high, standard`)
	must.Nil(t, f.nomad.body("PUT /v1/jobs"))
}

func TestAudit3_NamespaceResolvedAsNomadDoes(t *testing.T) {
	cases := map[string]struct {
		path, body string
		status     int
		want       string // in the answer
		key        string // where the request reaches Nomad ("" = nowhere)
	}{
		"query and job disagree": {path: "/v1/jobs?namespace=ml", body: `{"Job":` + job("a", "scratch", "", gpus("8")) + `}`,
			status: 400, want: `the request names two namespaces (?namespace= "ml", Job.Namespace "scratch"): Nomad would use "ml"`},
		"body and job disagree": {path: "/v1/jobs", body: `{"Namespace":"ml","Job":` + job("a", "scratch", "", gpus("8")) + `}`,
			status: 400, want: `the request's Namespace "ml", Job.Namespace "scratch"`},
		"quota theft: ungoverned query, victim's namespace in the job": {path: "/v1/jobs?namespace=default", body: `{"Job":` + job("a", "ml", "", gpus("1")) + `}`,
			status: 400, want: "names two namespaces"},
		"body namespace alone is the namespace": {path: "/v1/jobs", body: `{"Namespace":"ml","Job":` + job("a", "", "", gpus("8")) + `}`,
			status: 200, want: "allot: job ml/a is QUEUED", key: "PUT /v1/jobs"},
		"lower-case body namespace": {path: "/v1/jobs", body: `{"namespace":"ml","Job":` + job("a", "", "", gpus("8")) + `}`,
			status: 200, want: "allot: job ml/a is QUEUED", key: "PUT /v1/jobs"},
		"query alone is the namespace": {path: "/v1/job/a?namespace=ml", body: `{"Job":` + job("a", "", "", gpus("8")) + `}`,
			status: 200, want: "allot: job ml/a is QUEUED", key: "PUT /v1/job/a"},
		"region of another governor": {path: "/v1/jobs?region=eu", body: `{"Job":` + job("a", "ml", "", gpus("1")) + `}`,
			status: 400, want: `region "eu" is not the region this governor governs ("global")`},
		"region in the job": {path: "/v1/jobs", body: `{"Job":` + strings.Replace(job("a", "ml", "", gpus("1")), `"Type"`, `"Region":"eu","Type"`, 1) + `}`,
			status: 400, want: `region "eu" is not the region`},
		"dispatch with the body's namespace": {path: "/v1/job/param/dispatch", body: `{"Namespace":"ml"}`,
			status: 409, want: "dispatching ml/param is not admitted now"},
		"dispatch query and body disagree": {path: "/v1/job/param/dispatch?namespace=default", body: `{"Namespace":"ml"}`,
			status: 400, want: "names two namespaces"},
		"revert with the body's namespace": {path: "/v1/job/running/revert", body: `{"JobID":"running","JobVersion":1,"Namespace":"ml"}`,
			status: 409, want: "reverting ml/running to version 1 is not admitted now"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			f.stored(t, paramJob(4))
			f.nomad.versionsJSON = versionsJSON(t, gpuJob("running", 8, false, ""))
			status, out := put(t, f.srv.URL+tc.path, tc.body)
			must.Eq(t, tc.status, status, must.Sprint(out))
			text, ok := out["raw"].(string)
			if !ok {
				text, _ = out["Warnings"].(string)
			}
			must.StrContains(t, text, tc.want)
			if tc.key == "" {
				for k := range f.nomad.bodies {
					must.True(t, strings.HasPrefix(k, "GET "), must.Sprintf("only reads reached Nomad, not %s", k))
				}
			} else {
				must.NotNil(t, f.nomad.body(tc.key))
			}
			_, stolen := f.store.Job("ml", "a")
			must.Eq(t, tc.key != "", stolen, must.Sprint("the store knows only jobs Nomad got"))
		})
	}
}

func TestAudit5_DefaultsAreCounted(t *testing.T) {
	cases := map[string]struct {
		group, task string
		queued      bool
		cpu, mem    int64
	}{
		"device without count is one": {group: `"Count":3`, task: gpus(""), queued: true, cpu: 100, mem: 64},
		"two groups' worth fits":      {group: `"Count":2`, task: gpus(""), cpu: 100, mem: 64},
		"scaling min without count":   {group: `"Scaling":{"Min":3,"Max":5}`, task: gpus("1"), queued: true, cpu: 100, mem: 64},
		"no resources are Nomad's":    {task: "", cpu: 100, mem: 300},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			status, out := put(t, f.srv.URL+"/v1/jobs", `{"Job":`+job("d", "ml", tc.group, tc.task)+`}`)
			must.Eq(t, 200, status)
			must.Eq(t, tc.queued, strings.Contains(out["Warnings"].(string), "QUEUED"), must.Sprint(out["Warnings"]))
			j, ok := f.store.Job("ml", "d")
			must.True(t, ok)
			must.Eq(t, tc.cpu, j.Groups[0].CPU)
			must.Eq(t, tc.mem, j.Groups[0].MemoryMB)
		})
	}
}

func TestAudit6_HugeCountsRefusedAtTheDoor(t *testing.T) {
	cases := map[string]struct{ path, body, want string }{
		"device count over 2^63": {path: "/v1/jobs", body: `{"Job":` + job("o", "ml", "", gpus("18446744073709551612")) + `}`,
			want: `device "nvidia/gpu" count 18446744073709551612 is over the governor's bound of 1024`},
		"group count":        {path: "/v1/jobs", body: `{"Job":` + job("o", "ml", `"Count":1000000000`, gpus("1")) + `}`, want: `group "g" count 1000000000 is outside`},
		"negative count":     {path: "/v1/jobs", body: `{"Job":` + job("o", "ml", `"Count":-1`, gpus("1")) + `}`, want: `group "g" count -1 is outside`},
		"scaling max":        {path: "/v1/jobs", body: `{"Job":` + job("o", "ml", `"Count":1,"Scaling":{"Min":1,"Max":9223372036854775807}`, gpus("1")) + `}`, want: "scaling max"},
		"scale request":      {path: "/v1/job/running/scale?namespace=ml", body: `{"Count":4294967297,"Target":{"Group":"g"}}`, want: `group "g" count 4294967297 is outside`},
		"memory":             {path: "/v1/jobs", body: `{"Job":` + job("o", "ml", "", `"Resources":{"MemoryMB":9223372036854775807}`) + `}`, want: "memory"},
		"device count as -1": {path: "/v1/jobs", body: `{"Job":` + job("o", "ml", "", gpus("-1")) + `}`, want: "cannot unmarshal number -1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			f.admitted(t, runningJob())
			status, out := put(t, f.srv.URL+tc.path, tc.body)
			must.Eq(t, http.StatusBadRequest, status)
			must.StrContains(t, out["raw"].(string), tc.want)
			_, ok := f.store.Job("ml", "o")
			must.False(t, ok, must.Sprint("nothing reserved"))
		})
	}
}

func TestAudit9_PreserveCountsAdmitsTheStoredCounts(t *testing.T) {
	for name, preserve := range map[string]bool{"preserved: judged at the stored 4": true, "control: judged at the sent 1": false} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			big := gpuJob("big", 1, true, "")
			big.TaskGroups[0].Count = pointer(4)
			f.stored(t, big)
			body := `{"PreserveCounts":` + map[bool]string{true: "true", false: "false"}[preserve] + `,"Job":` + job("big", "ml", `"Count":1`, gpus("1")) + `}`
			status, out := put(t, f.srv.URL+"/v1/jobs", body)
			must.Eq(t, 200, status)
			must.Eq(t, preserve, strings.Contains(out["Warnings"].(string), "QUEUED"), must.Sprint(out["Warnings"]))
			j, _ := f.store.Job("ml", "big")
			must.Eq(t, map[bool]int{true: 4, false: 1}[preserve], j.Groups[0].Count)
		})
	}
}

func TestAudit10_DispatchLeavesNoReservation(t *testing.T) {
	f := newFixture(t, true)
	f.stored(t, paramJob(1))
	for i := 1; i <= 2; i++ {
		status, out := put(t, f.srv.URL+"/v1/job/param/dispatch?namespace=ml", `{}`)
		must.Eq(t, 200, status, must.Sprint(out))
	}
	var keys []string
	for _, j := range f.store.Snapshot(time.Now()).Jobs {
		keys = append(keys, j.Key())
	}
	for _, k := range keys {
		must.StrNotContains(t, k, "pending", must.Sprintf("jobs: %v", keys))
	}
	must.SliceContains(t, keys, "ml/param/dispatch-1", must.Sprint("the store sees the real child"))
	must.SliceContains(t, keys, "ml/param/dispatch-2")
}

func TestAudit10_DispatchNomadRefusedLeavesNothing(t *testing.T) {
	f := newFixture(t, true)
	f.stored(t, paramJob(1))
	f.nomad.failWrites = http.StatusInternalServerError
	status, _ := put(t, f.srv.URL+"/v1/job/param/dispatch?namespace=ml", `{}`)
	must.Eq(t, 500, status)
	for _, j := range f.store.Snapshot(time.Now()).Jobs {
		must.StrNotContains(t, j.Key(), "param/")
	}
}

// Without the capability Nomad will demand, no admission work happens:
// 403 with Nomad's words, nothing about the job, the tenant or its
// usage, no read of Nomad, no reservation.
func TestAudit16_NoAdmissionWorkWithoutCapability(t *testing.T) {
	cases := map[string]struct{ path, body, caps string }{
		"register":       {"/v1/jobs", `{"Job":` + job("x", "ml", "", gpus("8")) + `}`, "submit-job"},
		"scale":          {"/v1/job/running/scale?namespace=ml", `{"Count":500,"Target":{"Group":"g"}}`, "scale-job|submit-job"},
		"dispatch":       {"/v1/job/param/dispatch?namespace=ml", `{}`, "dispatch-job"},
		"revert":         {"/v1/job/running/revert?namespace=ml", `{"JobID":"running","JobVersion":1}`, "submit-job"},
		"periodic force": {"/v1/job/cron/periodic/force?namespace=ml", ``, "dispatch-job|submit-job"},
		"plan":           {"/v1/job/x/plan", `{"Job":` + job("x", "ml", "", gpus("8")) + `}`, "submit-job"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			f.admitted(t, runningJob())
			f.auth.deny = true
			status, out := put(t, f.srv.URL+tc.path, tc.body)
			must.Eq(t, http.StatusForbidden, status)
			must.Eq(t, "Permission denied", out["raw"].(string))
			must.Eq(t, []string{"caller-secret ml " + tc.caps}, f.auth.questions())
			must.Eq(t, 0, len(f.nomad.tokens), must.Sprint("Nomad was not asked anything"))
			_, reserved := f.store.Job("ml", "x")
			must.False(t, reserved)
		})
	}
}

// A re-submission carries the governor's record from the stored job,
// never from the body: forged queued-at / preempted-by / requeued-at are
// dropped (audit #8), and the requeue history survives (audit #18).
func TestAudit18_ResubmitCarriesTheStoredRecord(t *testing.T) {
	f := newFixture(t, true)
	requeued := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	prev := gpuJob("victim", 1, true, "")
	now := time.Now()
	must.NoError(t, f.sealer.Requeue(prev, jobmeta.Record{State: jobmeta.StateAdmitted, QueuedAt: now.Add(-time.Hour)}, "ml/preemptor",
		jobmeta.Stamp{Now: requeued}))
	sub := requeued.UnixNano()
	prev.SubmitTime = &sub
	f.store.UpsertJob(prev)
	stored, ok := f.store.Job("ml", "victim")
	must.True(t, ok)
	must.Eq(t, engine.Queued, stored.State, must.Sprint("the fixture's record is sealed"))

	forged := strings.Replace(job("victim", "ml", "", gpus("1")), `"Type"`,
		`"Meta":{"allot.queued-at":"2000-01-01T00:00:00Z","allot.preempted-by":"ml/blocker","allot.requeued-at":"2000-01-01T00:00:00Z","allot.requeues":"0","owner":"ana"},"Type"`, 1)
	status, out := put(t, f.srv.URL+"/v1/jobs", `{"Job":`+forged+`}`)
	must.Eq(t, 200, status, must.Sprint(out))
	meta := metaOf(sentJob(t, f, "PUT /v1/jobs"))
	must.Eq(t, "1", meta["allot.requeues"].(string))
	must.Eq(t, f.sealer.Ref("ml/preemptor"), meta["allot.preempted-by"].(string), must.Sprint("an opaque reference (audit #27)"))
	must.Eq(t, requeued.Format(time.RFC3339Nano), meta["allot.requeued-at"].(string))
	must.StrNotContains(t, meta["allot.queued-at"].(string), "2000-01-01")
	must.Eq(t, "ana", meta["owner"].(string))
	must.NotNil(t, meta["allot.seal"])
}

func TestAudit23_ParentsClassAndPriorityChecked(t *testing.T) {
	cases := map[string]struct {
		extra  string // job members
		status int
		want   string
	}{
		"periodic parent with a restricted class": {extra: `"Periodic":{"Spec":"@daily"},"Meta":{"allot.class":"production"},`, status: 400,
			want: `class "production" may not be used by tenant ml`},
		"periodic parent with an unknown class": {extra: `"Periodic":{"Spec":"@daily"},"Meta":{"allot.class":"gold"},`, status: 400,
			want: `class "gold" is not a class`},
		"parameterized parent: priority from the class, no governor state": {extra: `"ParameterizedJob":{},"Priority":100,"Meta":{"allot.class":"high","allot.state":"admitted"},`,
			status: 200},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			status, out := put(t, f.srv.URL+"/v1/jobs", `{"Job":`+strings.Replace(job("p", "ml", "", gpus("8")), `"Type"`, tc.extra+`"Type"`, 1)+`}`)
			must.Eq(t, tc.status, status, must.Sprint(out))
			if tc.status != 200 {
				must.StrContains(t, out["raw"].(string), tc.want)
				return
			}
			j := sentJob(t, f, "PUT /v1/jobs")
			must.Eq(t, float64(70), j["Priority"].(float64))
			must.Eq(t, map[string]any{"allot.class": "high"}, metaOf(j))
			must.Eq(t, false, j["Stop"].(bool))
		})
	}
}

func TestAudit23_DispatchMetaCannotCarryGovernorKeys(t *testing.T) {
	f := newFixture(t, true)
	f.stored(t, paramJob(1))
	status, out := put(t, f.srv.URL+"/v1/job/param/dispatch?namespace=ml", `{"Meta":{"allot.state":"admitted"}}`)
	must.Eq(t, 400, status)
	must.StrContains(t, out["raw"].(string), `dispatch meta key "allot.state" belongs to the governor`)
	status, out = put(t, f.srv.URL+"/v1/job/param/dispatch?namespace=ml", `{"Meta":{"allot.class":"production"}}`)
	must.Eq(t, 400, status, must.Sprint(out))
	must.StrContains(t, out["raw"].(string), `a dispatch cannot change the class ("production")`)
	must.Nil(t, f.nomad.body("PUT /v1/job/param/dispatch"))
}

// Read-only fields a caller sets (Status "dead", Dispatched, indexes) are
// dropped by Nomad; the reservation ignores them too.
func TestAudit24_CallerSetReadOnlyFieldsIgnored(t *testing.T) {
	f := newFixture(t, true)
	first := strings.Replace(job("one", "ml", "", gpus("2")), `"Type"`, `"Status":"dead","Dispatched":true,"JobModifyIndex":99999,"Type"`, 1)
	status, out := put(t, f.srv.URL+"/v1/jobs", `{"Job":`+first+`}`)
	must.Eq(t, 200, status)
	must.StrContains(t, out["Warnings"].(string), "allot: job ml/one admitted")
	status, out = put(t, f.srv.URL+"/v1/jobs", `{"Job":`+job("two", "ml", "", gpus("2"))+`}`)
	must.Eq(t, 200, status)
	must.StrContains(t, out["Warnings"].(string), "allot: job ml/two is QUEUED", must.Sprint("the first job's 2 GPUs count"))
}

func TestAudit30_BadGatewayHidesNomadsAddress(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	addr := dead.URL
	dead.Close()
	target, _ := url.Parse(addr)
	f := newFixture(t, true)
	p := New(Options{Target: target, Reconciler: f.proxy.rec, Store: f.store, Log: hclog.NewNullLogger(), Sealer: f.sealer,
		Governed: func(string) bool { return true }})
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	for _, path := range []string{"/v1/jobs", "/v1/nodes"} {
		req, _ := http.NewRequest("PUT", srv.URL+path, strings.NewReader(`{"Job":`+job("x", "ml", "", gpus("1"))+`}`))
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		data := make([]byte, 4096)
		n, _ := resp.Body.Read(data)
		resp.Body.Close()
		must.Eq(t, http.StatusBadGateway, resp.StatusCode)
		must.StrNotContains(t, string(data[:n]), target.Host)
		must.StrContains(t, string(data[:n]), "Nomad could not be reached")
	}
}

// Audit #22 (revert side): a revert restores the old version's governor
// record, allot.admitted-at included; the store does not count it, since
// its seal was made for the old version's submit time, so the gang
// timeout cannot fire on a stale admitted-at.
func TestAudit22_RevertedRecordDoesNotCount(t *testing.T) {
	f := newFixture(t, true)
	old := gpuJob("rev", 1, false, "")
	sealedAt := time.Now().Add(-3 * time.Hour)
	must.NoError(t, f.sealer.Admit(old, jobmeta.Record{}, jobmeta.Stamp{Now: sealedAt}))
	reverted := time.Now().UnixNano() // Nomad's submit time of the reverted version
	old.SubmitTime = &reverted
	f.store.UpsertJob(old)
	j, ok := f.store.Job("ml", "rev")
	must.True(t, ok)
	must.Eq(t, engine.Direct, j.State)
	must.True(t, j.AdmittedAt.IsZero(), must.Sprint("the stale admitted-at is not read"))
}

// Nomad reads the token from the headers, else from the body (SecretID in
// api types, AuthToken in its structs); so does the capability check.
func TestTokenReadAsNomadReadsIt(t *testing.T) {
	cases := map[string]struct {
		path, body, header string
		status             int
	}{
		"register, body SecretID":        {"/v1/jobs", `{"SecretID":"caller-secret","Job":` + job("x", "ml", "", gpus("1")) + `}`, "", 200},
		"register, header wins":          {"/v1/jobs", `{"SecretID":"caller-secret","Job":` + job("x", "ml", "", gpus("1")) + `}`, "other", 403},
		"dispatch, body AuthToken":       {"/v1/job/param/dispatch?namespace=ml", `{"AuthToken":"caller-secret"}`, "", 200},
		"scale ignores the body's token": {"/v1/job/running/scale?namespace=ml", `{"SecretID":"caller-secret","Count":1,"Target":{"Group":"g"}}`, "", 403},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			f.stored(t, paramJob(1))
			req, _ := http.NewRequest("PUT", f.srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.header != "" {
				req.Header.Set("X-Nomad-Token", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			must.NoError(t, err)
			resp.Body.Close()
			must.Eq(t, tc.status, resp.StatusCode)
		})
	}
}

// PUT /v1/job/ (an empty ID) is a register for Nomad: it is admitted too.
func TestEmptyPathIDIsARegister(t *testing.T) {
	f := newFixture(t, true)
	status, out := put(t, f.srv.URL+"/v1/job/", `{"Job":`+job("big", "ml", "", gpus("8"))+`}`)
	must.Eq(t, 200, status)
	must.StrContains(t, out["Warnings"].(string), "allot: job ml/big is QUEUED")
}
