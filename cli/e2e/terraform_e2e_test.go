//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/cli/tenant"
	gq "github.com/allot-sh/allot/governor/quota"
)

// terraformMeta runs real Terraform on the provider-free meta submodule of
// terraform/modules/tenant and returns the meta it computes, or skips when
// terraform is not installed.
func terraformMeta(t *testing.T, root, tfvars string) map[string]string {
	t.Helper()
	bin, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("SKIPPED: terraform is not installed (not on PATH)")
	}
	dir := t.TempDir()
	for _, f := range []string{"main.tf", "variables.tf", "outputs.tf", "versions.tf"} {
		src, err := os.ReadFile(filepath.Join(root, "terraform", "modules", "tenant", "meta", f))
		must.NoError(t, err)
		must.NoError(t, os.WriteFile(filepath.Join(dir, f), src, 0o644))
	}
	must.NoError(t, os.WriteFile(filepath.Join(dir, "in.tfvars"), []byte(tfvars), 0o644))
	rc := filepath.Join(dir, "empty.tfrc")
	must.NoError(t, os.WriteFile(rc, nil, 0o644))
	tf := func(args ...string) []byte {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		// No update check, no CLI config: no network.
		cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0", "TF_CLI_CONFIG_FILE="+rc)
		out, err := cmd.Output()
		must.NoError(t, err, must.Sprintf("terraform %v: %s", args, out))
		return out
	}
	tf("init", "-backend=false", "-input=false", "-no-color")
	tf("apply", "-auto-approve", "-no-color", "-lock=false", "-var-file=in.tfvars")
	var meta map[string]string
	must.NoError(t, json.Unmarshal(tf("output", "-json", "meta"), &meta))
	return meta
}

// terraformTenant writes what Terraform computes for a tenant into a
// namespace, as the nomad_namespace resource would, and checks that the
// running governor reads exactly that quota, without error.
func terraformTenant(t *testing.T, e *env) {
	meta := terraformMeta(t, e.root, `
cohort        = "research"
quota         = { gpu = 4, npu = 8, cpu = "32GHz", memory = "128GiB" }
limit         = { gpu = 8, npu = 8 }
default_class = "low"
`)
	_, err := e.c.API.Namespaces().Register(&api.Namespace{Name: "data-eng", Meta: meta}, nil)
	must.NoError(t, err)
	var got tenant.Status
	e.c.Eventually(30*time.Second, "the governor to read data-eng", func() error {
		var view tenant.View
		okJSON(t, &view, "tenant", "status", "data-eng")
		if view.GovernorError != "" || len(view.Tenants) != 1 || view.Tenants[0].Usage == nil {
			return fmt.Errorf("not accounted by the governor yet: %+v", view)
		}
		got = view.Tenants[0]
		return nil
	})
	must.Eq(t, "", got.Error)
	must.Eq(t, "research", got.Cohort)
	must.Eq(t, "low", got.DefaultClass)
	must.Eq(t, gq.Vector{"gpu": 4, "npu": 8, "cpu": 32000, "memory": 131072}, got.Quota)
	must.Eq(t, gq.Vector{"gpu": 8, "npu": 8}, got.Limit)
}
