package proxy

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// runningJob is the fixture's admitted job "running" (2 GPUs in use) as
// the store knows it.
func runningJob() *api.Job {
	return gpuJob("running", 2, false, "admitted")
}

// gpuJob is job id in namespace ml with one group of one task asking for
// gpus GPUs, at the given Stop flag and allot.state.
func gpuJob(id string, gpus uint64, stop bool, state string) *api.Job {
	return &api.Job{ID: pointer(id), Namespace: pointer("ml"), NodePool: pointer("gpu"), JobModifyIndex: pointer(uint64(5)),
		Stop: pointer(stop), Version: pointer(uint64(0)),
		Meta: map[string]string{"allot.state": state}, TaskGroups: []*api.TaskGroup{{Name: pointer("g"), Count: pointer(1),
			Tasks: []*api.Task{{Name: "t", Resources: &api.Resources{Devices: []*api.RequestedDevice{{Name: "gpu", Count: pointer(gpus)}}}}}}}}
}

// versionsJSON renders Nomad's answer to GET /v1/job/<id>/versions with the
// given job as version 1.
func versionsJSON(t *testing.T, v1 *api.Job) string {
	t.Helper()
	v1.Version = pointer(uint64(1))
	data, err := json.Marshal(map[string]any{"Versions": []*api.Job{v1, runningJob()}})
	must.NoError(t, err)
	return string(data)
}

func TestRevert(t *testing.T) {
	cases := map[string]struct {
		target     *api.Job
		path       string
		wantStatus int
		wantBody   string
		reachNomad bool
	}{
		"to a version over the limit is refused": {
			target: gpuJob("running", 8, false, "admitted"), path: "/v1/job/running/revert?namespace=ml",
			wantStatus: 409, wantBody: "reverting ml/running to version 1 is not admitted now",
		},
		"to a version that fits is forwarded": {
			target: gpuJob("running", 1, false, "admitted"), path: "/v1/job/running/revert?namespace=ml",
			wantStatus: 200, reachNomad: true,
		},
		"to a held version holds nothing and passes": {
			target: gpuJob("running", 8, true, "queued"), path: "/v1/job/running/revert?namespace=ml",
			wantStatus: 200, reachNomad: true,
		},
		"in an ungoverned namespace passes": {
			target: gpuJob("running", 8, false, "admitted"), path: "/v1/job/running/revert?namespace=default",
			wantStatus: 200, reachNomad: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			f.store.UpsertJob(runningJob())
			f.nomad.versionsJSON = versionsJSON(t, tc.target)
			status, out := put(t, f.srv.URL+tc.path, `{"JobID":"running","JobVersion":1}`)
			must.Eq(t, tc.wantStatus, status, must.Sprintf("answer: %v", out))
			if tc.wantBody != "" {
				must.StrContains(t, out["raw"].(string), tc.wantBody)
				must.StrContains(t, out["raw"].(string), "limit: needs 8 gpu; tenant ml uses 2 of limit 4")
			}
			must.Eq(t, tc.reachNomad, f.nomad.body("PUT /v1/job/running/revert") != nil)
		})
	}
}
