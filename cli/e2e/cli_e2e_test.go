//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/cli/queue"
	"github.com/allot-sh/allot/cli/quota"
	"github.com/allot-sh/allot/cli/tenant"
	"github.com/allot-sh/allot/governor/allotapi"
)

// refused is a loopback address nothing listens on.
const refused = "http://127.0.0.1:1"

// TestE2E_CLI drives allotctl against one Nomad cluster and governor: quota
// writes and their refusals, the declarative apply, tenant views with
// usage and borrowing, and the quickstart flow (nomad job run through the
// governor, then queue and job why).
func TestE2E_CLI(t *testing.T) {
	e := newEnv(t)
	t.Setenv("NOMAD_ADDR", e.c.Addr())
	t.Setenv("ALLOT_ADDR", e.g.Addr)
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_NAMESPACE", "")
	t.Setenv("ALLOT_GOVERNOR_CONFIG", e.config)

	t.Run("quota set writes validated meta and keeps the rest", func(t *testing.T) {
		out := ok(t, "quota", "set", "ml-research", "gpu=0", "memory=4GiB", "-limit", "gpu=2", "-cohort", "research", "-weight", "2")
		must.StrContains(t, out, `+ allot.limit.gpu = "2"`)
		must.Eq(t, map[string]string{"owner": "ml-research", "allot.quota.gpu": "0", "allot.quota.memory": "4GiB",
			"allot.limit.gpu": "2", "allot.cohort": "research", "allot.weight": "2"}, e.snapshot(t, "ml-research").meta)
		ok(t, "quota", "set", "-cohort", "research", "-lend", "gpu=2", "ml-serving", "gpu=4", "memory=64GiB")
		ns, _, err := e.c.API.Namespaces().Info("ml-serving", nil)
		must.NoError(t, err)
		must.Eq(t, "ml-serving team", ns.Description)
		must.Eq(t, "2", ns.Meta["allot.lend.gpu"])
	})

	t.Run("bad input is refused with a clear error and writes nothing", func(t *testing.T) { badInput(t, e) })

	t.Run("quota get", func(t *testing.T) {
		var got quota.GetOutput
		okJSON(t, &got, "quota", "get", "ml-research")
		must.Eq(t, int64(0), got.Tenant.Quota["gpu"])
		must.Eq(t, int64(4096), got.Tenant.Quota["memory"])
		must.Eq(t, int64(2), got.Tenant.Limit["gpu"])
		must.Eq(t, "", got.Error)
		must.MapNotContainsKey(t, got.Meta, "owner")
		must.StrContains(t, ok(t, "quota", "get", "ml-research"), "Cohort        = research")
	})

	t.Run("quota apply: dry run, apply, nothing left to do", func(t *testing.T) { apply(t, e) })

	t.Run("quota errors show in tenant list and quota get", func(t *testing.T) {
		_, err := e.c.API.Namespaces().Register(&api.Namespace{Name: "broken", Meta: map[string]string{"owner": "broken", "allot.quota.gpu": "lots"}}, nil)
		must.NoError(t, err)
		var view tenant.View
		okJSON(t, &view, "tenant", "list")
		must.StrContains(t, find(t, view, "broken").Error, `allot.quota.gpu="lots"`)
		must.StrContains(t, ok(t, "quota", "get", "broken"), "Error         = invalid quota for namespace broken")
	})

	t.Run("quickstart: nomad job run, queue, job why, tenant status", func(t *testing.T) { quickstart(t, e) })

	t.Run("what Terraform writes is what the governor reads", func(t *testing.T) { terraformTenant(t, e) })

	t.Run("flags win over the environment", func(t *testing.T) {
		t.Setenv("NOMAD_ADDR", refused)
		t.Setenv("ALLOT_ADDR", refused)
		r := ctl("tenant", "list")
		must.Eq(t, 1, r.code, must.Sprint(r.String()))
		must.StrContains(t, r.stderr, "127.0.0.1:1")
		must.StrContains(t, ok(t, "tenant", "list", "-address", e.c.Addr(), "-allot-address", e.g.Addr), "ml-research")
		must.StrContains(t, ok(t, "-address", e.c.Addr(), "-allot-address", e.g.Addr, "queue"), "train-multinode")
	})

	t.Run("governor down: tenant list still shows quotas, with a warning", func(t *testing.T) {
		r := ctl("tenant", "list", "-allot-address", refused)
		must.Zero(t, r.code, must.Sprint(r.String()))
		must.StrContains(t, r.stderr, "Warning: governor not reachable")
		must.StrContains(t, r.stdout, "ml-research")
	})

	t.Run("completion offers namespaces", func(t *testing.T) {
		saved := os.Args
		os.Args = []string{"allotctl", "tenant", "status", "--generate-bash-completion"}
		t.Cleanup(func() { os.Args = saved })
		must.StrContains(t, ok(t, "tenant", "status", "--generate-bash-completion"), "ml-research\n")
	})

	t.Run("quota unset", func(t *testing.T) {
		ok(t, "quota", "unset", "ml-serving", "memory")
		must.MapNotContainsKey(t, e.snapshot(t, "ml-serving").meta, "allot.quota.memory")
		ok(t, "quota", "unset", "broken", "-all")
		must.Eq(t, map[string]string{"owner": "broken"}, e.snapshot(t, "broken").meta)
	})
}

func find(t *testing.T, view tenant.View, ns string) tenant.Status {
	t.Helper()
	for _, s := range view.Tenants {
		if s.Namespace == ns {
			return s
		}
	}
	t.Fatalf("tenant %s not listed: %+v", ns, view)
	return tenant.Status{}
}

// badInput runs every refused command and checks that no namespace changed.
func badInput(t *testing.T, e *env) {
	bad := filepath.Join(e.dir, "bad.hcl")
	must.NoError(t, os.WriteFile(bad, []byte(`tenant "ml-research" { quota = { gpu = 8 }`), 0o644))
	half := filepath.Join(e.dir, "half.hcl")
	must.NoError(t, os.WriteFile(half, []byte(`
tenant "ml-serving"  { quota = { gpu = 6 } }
tenant "ml-research" {
  quota = { gpu = 8 }
  limit = { gpu = 4 }
}`), 0o644))
	missing := filepath.Join(e.dir, "missing.hcl")
	must.NoError(t, os.WriteFile(missing, []byte(`tenant "nope" { quota = { gpu = 1 } }`), 0o644))
	tests := map[string]struct {
		args []string
		want string
	}{
		"unknown resource":        {args: []string{"quota", "set", "ml-research", "tpu=1"}, want: `unknown resource "tpu"`},
		"negative quota":          {args: []string{"quota", "set", "ml-research", "gpu=-1"}, want: "allot.quota.gpu: bad amount"},
		"limit below quota":       {args: []string{"quota", "set", "ml-research", "gpu=8"}, want: "allot.limit.gpu=2 is below allot.quota.gpu=8"},
		"lend above quota":        {args: []string{"quota", "set", "ml-serving", "-lend", "gpu=5"}, want: "allot.lend.gpu=5 exceeds allot.quota.gpu=4"},
		"unknown class":           {args: []string{"quota", "set", "ml-research", "-classes", "gold"}, want: "unknown class(es) gold"},
		"zero weight":             {args: []string{"quota", "set", "ml-research", "-weight", "0"}, want: "weight must be a number > 0"},
		"missing namespace":       {args: []string{"quota", "set", "nope", "gpu=1"}, want: `namespace not found: "nope"`},
		"unset what is not set":   {args: []string{"quota", "unset", "ml-research", "npu"}, want: "nothing to unset: allot.quota.npu"},
		"malformed file":          {args: []string{"quota", "apply", "-f", bad}, want: "parsing " + bad},
		"one bad tenant in apply": {args: []string{"quota", "apply", "-f", half}, want: "allot.limit.gpu=4 is below allot.quota.gpu=8"},
		"apply to missing ns":     {args: []string{"quota", "apply", "-f", missing}, want: `namespace not found: "nope"`},
	}
	before := map[string]snapshot{"ml-research": e.snapshot(t, "ml-research"), "ml-serving": e.snapshot(t, "ml-serving")}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ctl(tc.args...)
			must.Eq(t, 1, r.code, must.Sprint(r.String()))
			must.StrContains(t, r.stderr, tc.want)
			must.StrNotContains(t, r.stderr, "panic")
			for ns, snap := range before {
				must.Eq(t, snap, e.snapshot(t, ns), must.Sprintf("namespace %s changed", ns))
			}
			_, _, err := e.c.API.Namespaces().Info("nope", nil)
			must.Error(t, err)
		})
	}
}

func apply(t *testing.T, e *env) {
	file := filepath.Join(e.dir, "tenants.hcl")
	must.NoError(t, os.WriteFile(file, []byte(`
tenant "ml-research" {
  cohort        = "research"
  weight        = 2
  quota         = { gpu = 0, memory = "4GiB" }
  limit         = { gpu = 2 }
  default_class = "standard"
}
tenant "ml-serving" {
  cohort  = "research"
  quota   = { gpu = 4, memory = "64GiB" }
  lend    = { gpu = 2 }
  classes = ["production", "standard"]
}`), 0o644))
	before := e.snapshot(t, "ml-research")
	out := ok(t, "quota", "apply", "-f", file, "-dry-run")
	must.StrContains(t, out, `+ allot.default-class = "standard"`)
	must.StrContains(t, out, `+ allot.classes = "production,standard"`)
	must.StrContains(t, out, "Dry run: 2 namespace(s) would change; nothing written.")
	must.Eq(t, before, e.snapshot(t, "ml-research"))

	must.StrContains(t, ok(t, "quota", "apply", "-f", file), "Applied")
	got := e.snapshot(t, "ml-research").meta
	must.Eq(t, "standard", got["allot.default-class"])
	must.Eq(t, "ml-research", got["owner"])
	must.Eq(t, "production,standard", e.snapshot(t, "ml-serving").meta["allot.classes"])

	out = ok(t, "quota", "apply", "-f", file, "-dry-run")
	must.StrContains(t, out, `namespace "ml-research": no changes`)
	must.StrContains(t, out, `namespace "ml-serving": no changes`)
}

// quickstart is README's flow: run a job through the governor, see it
// admitted (borrowing a GPU), queue a second one over the limit, and ask
// why.
func quickstart(t *testing.T, e *env) {
	e.nomadRun(t, "train-gpu.nomad.hcl", "namespace=ml-research", "command="+e.trainer,
		`args=["-save-every","1000","-step-time","10ms"]`, "checkpoint_timeout=5s", "kill_timeout=8s", "cpu=100", "memory=64")
	e.c.WaitForAlloc("ml-research", "train-gpu", 2*time.Minute, func(a *api.AllocationListStub) error {
		if a.ClientStatus != "running" {
			return fmt.Errorf("client status %s", a.ClientStatus)
		}
		return nil
	})
	// Same class as train-gpu: a higher class would preempt it (within-tenant
	// preemption) instead of queueing behind the limit.
	e.nomadRun(t, "train-multinode.nomad.hcl", "namespace=ml-research", "nodes=1", "gpus_per_node=2",
		"class=standard", "command=/bin/sh", `args=["-c","exit 0"]`, "cpu=100", "memory=64")

	var q queue.Output
	e.c.Eventually(time.Minute, "train-multinode in the queue", func() error {
		q = queue.Output{}
		okJSON(t, &q, "queue")
		if len(q.Jobs) == 0 {
			return fmt.Errorf("queue empty")
		}
		return nil
	})
	must.SliceLen(t, 1, q.Jobs)
	j := q.Jobs[0]
	must.Eq(t, "train-multinode", j.JobID)
	must.Eq(t, 1, j.Position)
	must.Eq(t, "standard", j.Class)
	must.Eq(t, int64(2), j.Request["gpu"]) // as the governor accounts it
	must.NotEq(t, "", j.Reason)
	table := ok(t, "queue")
	must.StrContains(t, table, "Position")
	must.StrContains(t, table, "gpu=2")
	must.StrContains(t, ok(t, "queue", "-namespace", "ml-serving"), "No queued jobs (1 in the whole queue)")

	var why allotapi.Why
	okJSON(t, &why, "job", "why", "-namespace", "ml-research", "train-multinode")
	must.Eq(t, "queued", why.State)
	failed := 0
	for _, c := range why.Checks {
		if !c.OK {
			failed++
		}
	}
	must.Positive(t, failed, must.Sprintf("checks: %+v", why.Checks))
	text := ok(t, "job", "why", "train-multinode", "-namespace", "ml-research")
	must.StrContains(t, text, "State")
	must.StrContains(t, text, "Checks")
	r := ctl("job", "why", "-namespace", "ml-research", "no-such-job")
	must.Eq(t, 1, r.code)
	must.StrContains(t, r.stderr, "not known to the governor")

	e.c.Eventually(time.Minute, "the governor to account the running job", func() error {
		var view tenant.View
		okJSON(t, &view, "tenant", "list")
		research, serving := find(t, view, "ml-research"), find(t, view, "ml-serving")
		if research.Usage["gpu"] != 1 || research.Borrowed["gpu"] != 1 || serving.Lent["gpu"] != 1 || research.Queued != 1 {
			return fmt.Errorf("research usage %v borrowed %v queued %d; serving lent %v",
				research.Usage, research.Borrowed, research.Queued, serving.Lent)
		}
		return nil
	})
	t.Logf("allotctl queue:\n%s\nallotctl job why:\n%s\nallotctl tenant list:\n%s", table, text, ok(t, "tenant", "list"))
	status := ok(t, "tenant", "status", "ml-research")
	t.Logf("allotctl tenant status ml-research:\n%s", status)
	must.StrContains(t, status, "Queued Jobs    = 1")
	must.True(t, strings.Contains(status, "Borrowed"), must.Sprint(status))
}
