package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
)

// A job over its tenant's limit that uses Vault, Consul or a template is
// held where the cluster does not demand the submitter's token for it,
// and refused (409) where it does (cluster.Store.UseTokens).
func TestSubmitterTokensDecideHoldOrRefuse(t *testing.T) {
	vault := `"Driver":"raw_exec","Vault":{"Policies":["x"]}`
	template := `"Driver":"raw_exec","Templates":[{"EmbeddedTmpl":"x","DestPath":"local/x"}]`
	cases := map[string]struct {
		tokens jobmeta.Tokens
		task   string
		held   bool
	}{
		"plain job, both demanded: held":     {jobmeta.Tokens{}, `"Driver":"raw_exec"`, true},
		"vault, both demanded: refused":      {jobmeta.Tokens{}, vault, false},
		"template, both demanded: refused":   {jobmeta.Tokens{}, template, false},
		"vault, none demanded: held":         {jobmeta.Tokens{VaultOptional: true, ConsulOptional: true}, vault, true},
		"template, none demanded: held":      {jobmeta.Tokens{VaultOptional: true, ConsulOptional: true}, template, true},
		"template, vault demanded: held":     {jobmeta.Tokens{ConsulOptional: true}, template, true},
		"vault, consul demanded: held":       {jobmeta.Tokens{VaultOptional: true}, vault, true},
		"template, consul demanded: refused": {jobmeta.Tokens{VaultOptional: true}, template, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, true)
			f.store.UseTokens(tc.tokens)
			body := strings.Replace(job("v", "ml", "", gpus("4")), `"Driver":"raw_exec"`, tc.task, 1)
			status, out := put(t, f.srv.URL+"/v1/jobs", `{"Job":`+body+`}`)
			if !tc.held {
				must.Eq(t, http.StatusConflict, status, must.Sprint(out))
				must.StrContains(t, out["raw"].(string), "Vault or Consul token")
				must.Nil(t, f.nomad.body("PUT /v1/jobs"))
				return
			}
			must.Eq(t, http.StatusOK, status, must.Sprint(out))
			var sent struct{ Job struct{ Stop bool } }
			must.NoError(t, json.Unmarshal(f.nomad.body("PUT /v1/jobs"), &sent))
			must.True(t, sent.Job.Stop, must.Sprint("held: written stopped"))
		})
	}
}
