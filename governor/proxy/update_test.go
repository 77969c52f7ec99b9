package proxy

import (
	"net/http"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
)

// storeRunningGPUJob stores the fixture's running job (allocation a1: 2 GPUs, no
// CPU or memory) as Nomad has it: registered straight to Nomad, 1 × 2
// GPUs.
func storeRunningGPUJob(t *testing.T, f *fixture) {
	t.Helper()
	j := api.NewBatchJob("running", "running", "global", 50)
	zero := 0
	j.Namespace, j.NodePool, j.Status = pointer("ml"), pointer("gpu"), pointer("running")
	j.JobModifyIndex = pointer(uint64(7))
	j.TaskGroups = []*api.TaskGroup{{Name: pointer("g"), Count: pointer(1), Tasks: []*api.Task{{Name: "t",
		Resources: &api.Resources{CPU: &zero, MemoryMB: &zero, Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: pointer(uint64(2))}}}}}}}
	f.store.UpsertJob(j)
	stored, ok := f.store.Job("ml", "running")
	must.True(t, ok)
	must.True(t, stored.Running())
}

// updateBody re-registers "running" with one allocation of gpus GPUs.
func updateBody(gpus string) string {
	return `{"Job":{"ID":"running","Namespace":"ml","Type":"batch","NodePool":"gpu","TaskGroups":[{"Name":"g","Count":1,` +
		`"Tasks":[{"Name":"t","Driver":"raw_exec","Resources":{"CPU":0,"MemoryMB":0,"Devices":[{"Name":"nvidia/gpu","Count":` + gpus + `}]}}]}]}}`
}

func TestAudit12_UpdateWeighedByWhatItReplaces(t *testing.T) {
	// ml: limit 4 GPUs; the running job holds 2 of them in one allocation.
	t.Run("growing 1x2 to 1x4 fits once its own allocation is replaced", func(t *testing.T) {
		f := newFixture(t, true)
		storeRunningGPUJob(t, f)
		status, out := put(t, f.srv.URL+"/v1/jobs", updateBody("4"))
		must.Eq(t, http.StatusOK, status, must.Sprint(out))
		meta := metaOf(sentJob(t, f, "PUT /v1/jobs"))
		must.Eq(t, "admitted", meta["allot.state"].(string))
	})
	t.Run("growing 1x2 to 1x6 is refused, never held: the running version keeps running", func(t *testing.T) {
		f := newFixture(t, true)
		storeRunningGPUJob(t, f)
		status, out := put(t, f.srv.URL+"/v1/jobs", updateBody("6"))
		must.Eq(t, http.StatusConflict, status, must.Sprint(out))
		must.StrContains(t, out["raw"].(string), "limit: needs 6 gpu; tenant ml uses 0 of limit 4")
		must.StrContains(t, out["raw"].(string), "refused rather than held")
		must.Nil(t, f.nomad.body("PUT /v1/jobs"), must.Sprint("nothing reached Nomad"))
		j, _ := f.store.Job("ml", "running")
		must.Eq(t, engine.Direct, j.State)
	})
}
