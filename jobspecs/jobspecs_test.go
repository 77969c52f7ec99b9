package jobspecs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/internal/testcluster"
)

// expect is what one jobspec of the catalog must declare.
type expect struct {
	jobType string
	class   string
	gang    string // allot.gang meta; "" when unset (default true)
	driver  string
	count   int               // allocations of the first group
	devices map[string]uint64 // device name -> count per task
}

// catalog lists every jobspec with what it must say when parsed with its
// defaults. A jobspec missing here fails TestCatalogComplete.
var catalog = map[string]expect{
	"train-checkpoint.nomad.hcl": {jobType: "batch", class: "standard", driver: "ckpt", count: 1},
	"train-gpu.nomad.hcl": {jobType: "batch", class: "standard", driver: "ckpt", count: 1,
		devices: map[string]uint64{"nvidia/gpu": 1}},
	"train-multinode.nomad.hcl": {jobType: "batch", class: "high", gang: "true", driver: "ckpt", count: 4,
		devices: map[string]uint64{"nvidia/gpu": 8}},
	"inference.nomad.hcl": {jobType: "service", class: "production", driver: "raw_exec", count: 2,
		devices: map[string]uint64{"nvidia/gpu": 1}},
	"batch-eval.nomad.hcl": {jobType: "batch", class: "low", gang: "false", driver: "raw_exec", count: 4,
		devices: map[string]uint64{"nvidia/gpu": 1}},
	"notebook.nomad.hcl": {jobType: "service", class: "best-effort", driver: "raw_exec", count: 1,
		devices: map[string]uint64{"nvidia/gpu": 1}},
	"preprocess-cpu.nomad.hcl": {jobType: "batch", class: "standard", gang: "false", driver: "raw_exec", count: 4},
	"train-ascend.nomad.hcl": {jobType: "batch", class: "standard", driver: "ckpt", count: 1,
		devices: map[string]uint64{"huawei/npu": 8}},
}

func jobspecFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.nomad.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
	return files
}

func parseFile(t *testing.T, file string, vars ...string) *api.Job {
	t.Helper()
	src, err := os.ReadFile(file)
	must.NoError(t, err)
	job, err := testcluster.ParseHCL(file, src, vars...)
	must.NoError(t, err)
	return job
}

func TestCatalogComplete(t *testing.T) {
	files := jobspecFiles(t)
	for _, f := range files {
		_, ok := catalog[f]
		must.True(t, ok, must.Sprintf("%s is not in the test catalog", f))
	}
	must.MapLen(t, len(files), catalog, must.Sprint("catalog lists a jobspec that does not exist"))
}

func TestJobspecsParse(t *testing.T) {
	classes := config.Default().Classes
	for file, want := range catalog {
		t.Run(file, func(t *testing.T) {
			job := parseFile(t, file)
			must.Eq(t, want.jobType, *job.Type)
			must.Eq(t, want.class, job.Meta["allot.class"])
			_, known := classes[job.Meta["allot.class"]]
			must.True(t, known, must.Sprintf("class %q is not a default class", job.Meta["allot.class"]))
			must.Eq(t, want.gang, job.Meta["allot.gang"])
			must.SliceNotEmpty(t, job.TaskGroups)
			tg := job.TaskGroups[0]
			must.Eq(t, want.count, countOf(tg))
			must.SliceLen(t, 1, tg.Tasks)
			task := tg.Tasks[0]
			must.Eq(t, want.driver, task.Driver)
			must.Eq(t, want.devices, devicesOf(task))
			for _, k := range []string{"allot.state", "allot.queued-at", "allot.admitted-at", "allot.requeues"} {
				_, set := job.Meta[k]
				must.False(t, set, must.Sprintf("%s is the governor's key; jobspecs must not set it", k))
			}
		})
	}
}

// countOf is the group's count as Nomad reads it (1 when unset).
func countOf(tg *api.TaskGroup) int {
	if tg.Count == nil {
		return 1
	}
	return *tg.Count
}

func devicesOf(task *api.Task) map[string]uint64 {
	if task.Resources == nil || len(task.Resources.Devices) == 0 {
		return nil
	}
	out := map[string]uint64{}
	for _, d := range task.Resources.Devices {
		out[d.Name] = *d.Count
	}
	return out
}

// TestJobspecVariables checks the knobs the README and the e2e test use.
func TestJobspecVariables(t *testing.T) {
	tests := map[string]struct {
		file  string
		vars  []string
		check func(t *testing.T, job *api.Job)
	}{
		"multinode size": {file: "train-multinode.nomad.hcl", vars: []string{"nodes=2", "gpus_per_node=4"},
			check: func(t *testing.T, job *api.Job) {
				must.Eq(t, 2, *job.TaskGroups[0].Count)
				must.Eq(t, map[string]uint64{"nvidia/gpu": 4}, devicesOf(job.TaskGroups[0].Tasks[0]))
				must.Eq(t, "2", job.TaskGroups[0].Tasks[0].Env["NNODES"])
			}},
		"namespace": {file: "batch-eval.nomad.hcl", vars: []string{"namespace=ml-research"},
			check: func(t *testing.T, job *api.Job) { must.Eq(t, "ml-research", *job.Namespace) }},
		"command override": {file: "notebook.nomad.hcl", vars: []string{"command=/bin/sh", `args=["-c","true"]`},
			check: func(t *testing.T, job *api.Job) {
				cfg := job.TaskGroups[0].Tasks[0].Config
				must.Eq(t, "/bin/sh", cfg["command"].(string))
				must.Eq(t, []any{"-c", "true"}, cfg["args"].([]any))
			}},
		"class override": {file: "train-gpu.nomad.hcl", vars: []string{"class=high"},
			check: func(t *testing.T, job *api.Job) { must.Eq(t, "high", job.Meta["allot.class"]) }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { tc.check(t, parseFile(t, tc.file, tc.vars...)) })
	}
}

// TestJobspecsValidate runs `nomad job validate` (Nomad v1.6.1's own job
// validation; with no agent reachable it validates locally) on every
// jobspec. The e2e test validates them against a real server too.
func TestJobspecsValidate(t *testing.T) {
	nomad, err := testcluster.NomadBinary()
	if err != nil {
		t.Skipf("SKIPPED: no Nomad binary for `nomad job validate` (%v); TestE2EJobspecs validates on a server", err)
	}
	for file := range catalog {
		t.Run(file, func(t *testing.T) {
			out, err := validate(nomad, file)
			must.NoError(t, err, must.Sprintf("nomad job validate %s:\n%s", file, out))
			must.StrContains(t, out, "Job validation successful")
		})
	}
	t.Run("nomad fmt -check", func(t *testing.T) {
		out, err := exec.Command(nomad, "fmt", "-check", ".").CombinedOutput()
		must.NoError(t, err, must.Sprintf("not formatted (run `bin/nomad fmt jobspecs`):\n%s", out))
	})
	t.Run("invalid job is rejected", func(t *testing.T) {
		out, err := validate(nomad, "preprocess-cpu.nomad.hcl", "-var", "parts=-1")
		must.Error(t, err)
		must.StrContains(t, out, "count")
	})
}

func validate(nomad, file string, args ...string) (string, error) {
	cmd := exec.Command(nomad, append(append([]string{"job", "validate"}, args...), file)...)
	// Port 1 on loopback refuses the connection: validation runs locally.
	cmd.Env = append(os.Environ(), "NOMAD_ADDR=http://127.0.0.1:1", "NOMAD_TOKEN=")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
