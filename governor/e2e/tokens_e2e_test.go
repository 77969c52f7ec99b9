//go:build e2e

package e2e

import (
	"os"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/testcluster"
)

// TestE2E_SubmitterTokens: on a Nomad 1.6.1 server that demands the
// submitter's Vault token (vault enabled with allow_unauthenticated =
// false; the Vault address is a closed loopback port: Nomad refuses a
// missing token before asking Vault), the governor reads that at start,
// holds ordinary jobs over their limit (a template too: Consul tokens are
// not demanded) and refuses (409) one with a vault block, which Nomad
// itself refuses without the token, so a held copy could never be
// written again.
func TestE2E_SubmitterTokens(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{
		ServerExtra: "vault {\n  enabled               = true\n  allow_unauthenticated = false\n  address               = \"http://127.0.0.1:1\"\n  token                 = \"not-a-real-token\"\n}\n",
		Clients:     []testcluster.ClientSpec{{Name: "c1"}},
	})
	_, err := c.API.Namespaces().Register(&api.Namespace{Name: "team-a",
		Meta: map[string]string{"allot.quota.cpu": "100", "allot.limit.cpu": "100"}}, nil)
	must.NoError(t, err)
	g := c.StartGovernor()
	log, err := os.ReadFile(g.LogPath)
	must.NoError(t, err)
	must.StrContains(t, string(log), "submitter tokens read from the Nomad server's configuration: demanded=vault")

	gov, err := api.NewClient(&api.Config{Address: g.Addr})
	must.NoError(t, err)
	wo := &api.WriteOptions{Namespace: "team-a"}
	for _, id := range []string{"plain", "templated"} {
		resp, _, err := gov.Jobs().Register(tokenJob(id, id == "templated", false), wo)
		must.NoError(t, err)
		must.StrContains(t, resp.Warnings, "QUEUED")
		stored, _, err := c.API.Jobs().Info(id, &api.QueryOptions{Namespace: "team-a"})
		must.NoError(t, err)
		must.True(t, *stored.Stop, must.Sprintf("%s: a job over its limit is held", id))
	}

	_, _, err = c.API.Jobs().Register(tokenJob("direct", false, true), wo)
	must.ErrorContains(t, err, "Vault used in the job but missing Vault token")

	_, _, err = gov.Jobs().Register(tokenJob("vaulted", false, true), wo)
	must.ErrorContains(t, err, "409")
	must.ErrorContains(t, err, "Vault or Consul token")
	_, _, err = c.API.Jobs().Info("vaulted", &api.QueryOptions{Namespace: "team-a"})
	must.ErrorContains(t, err, "404", must.Sprint("nothing written"))
}

// tokenJob is a raw_exec batch job of 200 MHz (over team-a's limit of
// 100), with a template or a vault block when asked.
func tokenJob(id string, templated, vault bool) *api.Job {
	task := api.NewTask("t", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"300"}).
		Require(&api.Resources{CPU: pointerTo(200), MemoryMB: pointerTo(32)})
	if templated {
		task.Templates = []*api.Template{{EmbeddedTmpl: pointerTo("x"), DestPath: pointerTo("local/x")}}
	}
	if vault {
		task.Vault = &api.Vault{Policies: []string{"db"}}
	}
	j := api.NewBatchJob(id, id, "global", 50)
	j.Namespace = pointerTo("team-a")
	return j.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
}
