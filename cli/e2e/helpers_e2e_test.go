//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/cli/app"
	"github.com/allot-sh/allot/internal/testcluster"
)

// env is the cluster, governor and files the CLI test shares.
type env struct {
	c       *testcluster.Cluster
	g       *testcluster.Governor
	dir     string
	root    string
	trainer string
	config  string
}

// newEnv starts one dev node (8×H200 + 8×Ascend910B, ckpt driver), the
// tenant namespaces and a governor with a 1s cycle.
func newEnv(t *testing.T) *env {
	root, err := testcluster.RepoRoot()
	must.NoError(t, err)
	e := &env{dir: t.TempDir(), root: root}
	inv := filepath.Join(root, "device-plugin", "inventory", "examples", "dev-node.hcl")
	e.c = testcluster.New(t, testcluster.Options{
		Plugins: []string{"nomad-device-accel", "nomad-driver-ckpt"},
		Clients: []testcluster.ClientSpec{{Name: "gpu-1", PluginConfig: map[string]string{
			"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv),
			"nomad-driver-ckpt":  fmt.Sprintf("checkpoint_root = %q\n%s", t.TempDir(), testcluster.CkptUnisolated),
		}, Ready: testcluster.HasDevices("nvidia/gpu/H200", 8)}},
	})
	for _, ns := range []string{"ml-research", "ml-serving", "broken"} {
		_, err := e.c.API.Namespaces().Register(&api.Namespace{Name: ns, Description: ns + " team",
			Meta: map[string]string{"owner": ns}}, nil)
		must.NoError(t, err)
	}
	e.config = filepath.Join(e.dir, "governor.hcl")
	must.NoError(t, os.WriteFile(e.config, []byte("cycle_interval = \"1s\"\n"), 0o644))
	e.g = e.c.StartGovernor("-config", e.config)
	e.trainer = testcluster.BuildToyTrainer(t, e.dir)
	return e
}

// result is one allotctl run.
type result struct {
	code           int
	stdout, stderr string
}

// ctl runs allotctl in-process.
func ctl(args ...string) result {
	var out, errOut bytes.Buffer
	code := app.Run(context.Background(), append([]string{"allotctl"}, args...), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// ok runs allotctl and requires success.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := ctl(args...)
	must.Zero(t, r.code, must.Sprint(r.String()))
	return r.stdout
}

// okJSON runs allotctl with -json and decodes its output into v.
func okJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := ok(t, append(args, "-json")...)
	must.NoError(t, json.Unmarshal([]byte(out), v), must.Sprint(out))
}

// snapshot is a namespace as Nomad stores it.
type snapshot struct {
	meta  map[string]string
	index uint64
}

func (e *env) snapshot(t *testing.T, ns string) snapshot {
	t.Helper()
	n, _, err := e.c.API.Namespaces().Info(ns, nil)
	must.NoError(t, err)
	return snapshot{meta: n.Meta, index: n.ModifyIndex}
}

// nomadRun submits a catalog jobspec with the real nomad CLI through the
// governor's proxy, as the quickstart does.
func (e *env) nomadRun(t *testing.T, file string, vars ...string) {
	t.Helper()
	nomad, err := testcluster.NomadBinary()
	must.NoError(t, err)
	args := []string{"job", "run", "-detach"}
	for _, v := range vars {
		args = append(args, "-var", v)
	}
	cmd := exec.Command(nomad, append(args, filepath.Join(e.root, "jobspecs", file))...)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+e.g.Addr, "NOMAD_NAMESPACE=", "NOMAD_TOKEN=")
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprintf("nomad job run: %s", out))
}
