package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// BenchmarkRegister sends job registrations as the api client writes them
// through the proxy to a fake Nomad in the same process; the jobs are
// queued (tenant ml is at its limit). ns/op includes the client and the
// fake Nomad, the same for every version of the proxy.
func BenchmarkRegister(b *testing.B) {
	f := newFixture(b, true)
	client := &http.Client{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("bench-%d", i)
		j := api.NewBatchJob(id, id, "global", 50)
		j.Namespace, j.NodePool = pointer("ml"), pointer("gpu")
		task := api.NewTask("t", "raw_exec").SetConfig("command", "/bin/true").SetConfig("args", []string{"1"})
		task.Env = map[string]string{"A": "1"}
		task.Resources = &api.Resources{CPU: pointer(100), MemoryMB: pointer(64),
			Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: pointer(uint64(4))}}}
		j.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
		j.Canonicalize()
		body, err := json.Marshal(&api.JobRegisterRequest{Job: j})
		must.NoError(b, err)
		req, err := http.NewRequest("PUT", f.srv.URL+"/v1/jobs", strings.NewReader(string(body)))
		must.NoError(b, err)
		req.Header.Set("X-Nomad-Token", "caller-secret")
		resp, err := client.Do(req)
		must.NoError(b, err)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
