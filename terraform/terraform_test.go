package terraform

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// terraformBin returns the terraform CLI, or skips the test visibly.
func terraformBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("SKIPPED: terraform is not installed (not on PATH); install it to run this check")
	}
	return bin
}

// terraform runs the CLI in dir without any network: no update check and
// no CLI config.
func terraform(t *testing.T, bin, dir string, args ...string) (string, error) {
	t.Helper()
	out, err := terraformCmd(t, bin, dir, args...).CombinedOutput()
	return string(out), err
}

func terraformCmd(t *testing.T, bin, dir string, args ...string) *exec.Cmd {
	t.Helper()
	rc := filepath.Join(t.TempDir(), "empty.tfrc")
	must.NoError(t, os.WriteFile(rc, nil, 0o644))
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0", "TF_CLI_CONFIG_FILE="+rc)
	return cmd
}

func TestTerraformFmt(t *testing.T) {
	bin := terraformBin(t)
	out, err := terraform(t, bin, ".", "fmt", "-check", "-recursive", "-diff", ".")
	must.NoError(t, err, must.Sprintf("run `terraform fmt -recursive terraform/`:\n%s", out))
}

// TestTerraformValidate needs the hashicorp/nomad provider, which `terraform
// init` downloads from registry.terraform.io.
func TestTerraformValidate(t *testing.T) {
	bin := terraformBin(t)
	if os.Getenv("ALLOT_TF_VALIDATE") != "1" {
		t.Skip("SKIPPED: terraform validate needs `terraform init` to download the hashicorp/nomad provider " +
			"from registry.terraform.io, which this environment may not reach; set ALLOT_TF_VALIDATE=1 where it can")
	}
	for _, dir := range []string{"modules/tenant", "examples/platform"} {
		t.Run(dir, func(t *testing.T) {
			work := copyTree(t, ".")
			d := filepath.Join(work, dir)
			out, err := terraform(t, bin, d, "init", "-backend=false", "-input=false")
			must.NoError(t, err, must.Sprint(out))
			out, err = terraform(t, bin, d, "validate", "-no-color")
			must.NoError(t, err, must.Sprint(out))
		})
	}
}

// TestRealTerraformAgrees runs the meta module (which needs no provider)
// through real Terraform for every case of TestMetaMatchesGovernorParser:
// Terraform must accept and reject the same inputs as the HCL evaluation
// and write the same meta.
func TestRealTerraformAgrees(t *testing.T) {
	bin := terraformBin(t)
	dir := t.TempDir()
	for _, f := range []string{"main.tf", "variables.tf", "outputs.tf", "versions.tf"} {
		src, err := os.ReadFile(filepath.Join(metaDir, f))
		must.NoError(t, err)
		must.NoError(t, os.WriteFile(filepath.Join(dir, f), src, 0o644))
	}
	out, err := terraform(t, bin, dir, "init", "-backend=false", "-input=false", "-no-color")
	must.NoError(t, err, must.Sprint(out))
	m, err := loadModule(metaDir)
	must.NoError(t, err)
	for name, tc := range metaCases() {
		tc := tc
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			caseDir := t.TempDir()
			varFile, state := filepath.Join(caseDir, "case.tfvars"), filepath.Join(caseDir, "state")
			must.NoError(t, os.WriteFile(varFile, []byte(tc.vars+"\n"), 0o644))
			out, err := terraform(t, bin, dir, "apply", "-auto-approve", "-no-color", "-lock=false",
				"-state="+state, "-var-file="+varFile)
			if !tc.valid {
				must.Error(t, err, must.Sprintf("terraform accepted invalid inputs:\n%s", out))
				must.StrContains(t, out, "Error: ")
				return
			}
			must.NoError(t, err, must.Sprint(out))
			js, err := terraformCmd(t, bin, dir, "output", "-json", "-state="+state, "meta").Output()
			must.NoError(t, err)
			var got map[string]string
			must.NoError(t, json.Unmarshal(js, &got), must.Sprintf("%s", js))
			in, err := parseVars(tc.vars)
			must.NoError(t, err)
			res, err := m.eval(in)
			must.NoError(t, err)
			want, err := stringMap(res.locals["meta"])
			must.NoError(t, err)
			must.Eq(t, want, got)
		})
	}
}

// copyTree copies the .tf files under root into a temp dir.
func copyTree(t *testing.T, root string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".tf") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, p)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, src, 0o644)
	})
	must.NoError(t, err)
	return dst
}
