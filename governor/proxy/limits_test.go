package proxy

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
)

// Audit #17 (proxy side): bodies over the cap get 413, admission
// requests over the in-flight cap get 429 with Retry-After.
func TestAudit17_BodyCapAndInFlightCap(t *testing.T) {
	f := newFixture(t, true)
	big := `{"Job":` + job("x", "ml", "", gpus("1")) + `,"Pad":"` + strings.Repeat("a", 1<<20) + `"}`
	status, out := put(t, f.srv.URL+"/v1/jobs", big)
	must.Eq(t, http.StatusRequestEntityTooLarge, status)
	must.StrContains(t, out["raw"].(string), "request body over 1048576 bytes")
	must.Nil(t, f.nomad.body("PUT /v1/jobs"))

	for i := 0; i < cap(f.proxy.slots); i++ {
		f.proxy.slots <- struct{}{}
	}
	req, _ := http.NewRequest("PUT", f.srv.URL+"/v1/jobs", strings.NewReader(`{"Job":`+job("x", "ml", "", gpus("1"))+`}`))
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusTooManyRequests, resp.StatusCode)
	must.Eq(t, "1", resp.Header.Get("Retry-After"))
	resp, err = http.Get(f.srv.URL + "/v1/jobs")
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusOK, resp.StatusCode, must.Sprint("reads are not capped"))
}

func TestJobTypesTheGovernorDoesNotAdmitItself(t *testing.T) {
	cases := map[string]struct {
		extra, typ string
		system     string
		status     int
		want       string
		stop       bool
	}{
		"system job refused by default": {typ: "system", status: 400, want: `system jobs are not allowed in governed namespace ml (the governor's system_jobs = "refuse")`},
		"sysbatch job refused":          {typ: "sysbatch", status: 400, want: "sysbatch jobs are not allowed"},
		"system job governed":           {typ: "system", system: SystemJobsGovern, status: 200, want: "allot: job ml/x"},
		"registered stopped: no governor state": {typ: "batch", extra: `"Stop":true,"Meta":{"allot.state":"queued","allot.queued-at":"2000-01-01T00:00:00Z"},`,
			status: 200, stop: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			f.proxy.system = SystemJobsRefuse
			if tc.system != "" {
				f.proxy.system = tc.system
			}
			member := strings.Replace(job("x", "ml", "", gpus("1")), `"Type":"batch"`, tc.extra+`"Type":"`+tc.typ+`"`, 1)
			status, out := put(t, f.srv.URL+"/v1/jobs", `{"Job":`+member+`}`)
			must.Eq(t, tc.status, status, must.Sprint(out))
			if tc.status != 200 {
				must.StrContains(t, out["raw"].(string), tc.want)
				must.Nil(t, f.nomad.body("PUT /v1/jobs"))
				return
			}
			j := sentJob(t, f, "PUT /v1/jobs")
			if tc.stop {
				must.Eq(t, true, j["Stop"].(bool))
				must.Nil(t, metaOf(j), must.Sprint("governor-owned keys dropped"))
				return
			}
			must.StrContains(t, out["Warnings"].(string), tc.want)
		})
	}
}

// Audit #19: a job that needs its submitter's Vault or Consul token is
// never held (the governor could not write it again): admitted, or
// refused with the reason.
func TestAudit19_SubmitterTokenJobsAreNeverHeld(t *testing.T) {
	f := newFixture(t, true)
	member := strings.Replace(job("v", "ml", "", gpus("4")), `"Driver":"raw_exec"`, `"Driver":"raw_exec","Vault":{"Policies":["x"]}`, 1)
	status, out := put(t, f.srv.URL+"/v1/jobs", `{"Job":`+member+`}`)
	must.Eq(t, http.StatusConflict, status)
	must.StrContains(t, out["raw"].(string), "registering ml/v is not admitted now (nothing was changed): limit:")
	must.StrContains(t, out["raw"].(string), "Vault or Consul token")
	must.Nil(t, f.nomad.body("PUT /v1/jobs"))
}

func TestPeriodicForceAdmitsTheChild(t *testing.T) {
	for name, tc := range map[string]struct {
		gpus   uint64
		status int
	}{"over the limit: refused": {4, 409}, "fits: launched": {1, 200}} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			parent := gpuJob("cron", tc.gpus, false, "")
			parent.Periodic = &api.PeriodicConfig{Spec: pointer("@daily"), Enabled: pointer(true)}
			f.stored(t, parent)
			status, out := put(t, f.srv.URL+"/v1/job/cron/periodic/force?namespace=ml", ``)
			must.Eq(t, tc.status, status, must.Sprint(out))
			must.Eq(t, tc.status == 200, f.nomad.body("PUT /v1/job/cron/periodic/force") != nil)
			_, pending := f.store.Job("ml", "cron/periodic-pending")
			must.False(t, pending, must.Sprint("no reservation left behind"))
		})
	}
}

// A dispatch-only or scale-only token cannot read jobs; the proxy then
// weighs the parent or the scaled job as its store knows it (from Nomad's
// event stream) and reads nothing for the caller.
func TestStoreKnownJobsNeedNoRead(t *testing.T) {
	f := newFixture(t, true)
	f.store.UpsertJob(paramJob(1))
	status, out := put(t, f.srv.URL+"/v1/job/param/dispatch?namespace=ml", `{}`)
	must.Eq(t, 200, status, must.Sprint(out))
	must.Eq(t, []string{"caller-secret"}, f.nomad.tokens, must.Sprint("only the dispatch reached Nomad"))

	running := runningJob()
	must.NoError(t, f.sealer.Admit(running, jobmeta.Record{}, jobmeta.Stamp{Now: time.Now()}))
	now := time.Now().UnixNano()
	running.SubmitTime = &now
	f.store.UpsertJob(running)
	status, out = put(t, f.srv.URL+"/v1/job/running/scale?namespace=ml", `{"Count":3,"Target":{"Group":"g"}}`)
	must.Eq(t, http.StatusConflict, status, must.Sprint(out))
	must.Eq(t, 1, len(f.nomad.tokens), must.Sprint("nothing read for the refused scale"))
}
