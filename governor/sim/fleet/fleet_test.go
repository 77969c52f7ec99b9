package fleet

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shoenig/test/must"
)

func TestStandardScenarioUsesTheDemoInventory(t *testing.T) {
	s, err := Load("../scenarios/standard.hcl")
	must.NoError(t, err)
	must.EqOp(t, 512, s.GPUs())
	nodes := s.Nodes()
	must.SliceLen(t, 64, nodes)
	must.EqOp(t, "nvidia/gpu/H200", nodes[0].Devices[0].ID())
	must.EqOp(t, 8, nodes[0].Devices[0].Healthy)
	must.EqOp(t, "huawei/npu/Ascend910B", nodes[0].Devices[1].ID())
	must.EqOp(t, "143771 MiB", nodes[0].Devices[0].Attributes["memory"])
	must.Eq(t, []string{"nlp", "recsys", "research", "speech", "vision"}, s.TenantNames())
	must.MapContainsKey(t, s.Tenants[0].NamespaceMeta(512), "allot.limit.gpu")
	must.EqOp(t, "128", s.Tenants[0].NamespaceMeta(512)["allot.quota.gpu"])
	s.Scale(1000)
	must.EqOp(t, 8000, s.GPUs())
}

// TestManyTenantsScenario checks the promises many.hcl's header makes:
// 32 tenants on the standard nodes, nominal quotas that add up to the
// cluster at most, and limits that let every tenant borrow for the
// generator's largest (64-GPU) gang, so no generated job is one the
// governor must hold for ever.
func TestManyTenantsScenario(t *testing.T) {
	s, err := Load("../scenarios/many.hcl")
	must.NoError(t, err)
	must.EqOp(t, 512, s.GPUs())
	must.SliceLen(t, 32, s.Tenants)
	var quota int
	for _, tn := range s.Tenants {
		meta := tn.NamespaceMeta(s.GPUs())
		q, err := strconv.Atoi(meta["allot.quota.gpu"])
		must.NoError(t, err)
		lim, err := strconv.Atoi(meta["allot.limit.gpu"])
		must.NoError(t, err)
		must.Positive(t, q, must.Sprint(tn.Name))
		must.GreaterEq(t, 64, lim, must.Sprint(tn.Name))
		quota += q
	}
	must.LessEq(t, s.GPUs(), quota)
}

func write(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	must.NoError(t, os.WriteFile(p, []byte(src), 0o600))
	return p
}

func TestUnhealthyDevicesAreNotCapacity(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "n.hcl", "gpu \"A100\" {\n  count = 4\n}\nunhealthy = [\"A100[1]: XID 79\"]\n")
	p := write(t, dir, "c.hcl", "node \"a\" {\n  inventory = \"n.hcl\"\n  count = 3\n  cpu_mhz = 1000\n  memory_mib = 1000\n}\n")
	s, err := Load(p)
	must.NoError(t, err)
	must.EqOp(t, 9, s.GPUs())
	must.EqOp(t, "default", s.Kinds[0].Pool)
}

func TestBadClusterFilesNameFileAndLine(t *testing.T) {
	inv := "gpu \"A100\" {\n  count = 4\n}\n"
	node := func(extra string) string {
		return "node \"a\" {\n  inventory = \"n.hcl\"\n  count = 1\n  cpu_mhz = 1000\n  memory_mib = 1000\n" + extra + "}\n"
	}
	cases := map[string]struct{ inv, cluster, want string }{
		"syntax":            {inv, "node \"a\" {\n", "c.hcl:2,1: "},
		"unknown key":       {inv, node("  colour = 1\n"), "c.hcl:6,"},
		"missing count":     {inv, "node \"a\" {\n  inventory = \"n.hcl\"\n  cpu_mhz = 1\n  memory_mib = 1\n}\n", "c.hcl:1,"},
		"no nodes":          {inv, "", "no node blocks"},
		"zero cpu":          {inv, "node \"a\" {\n  inventory = \"n.hcl\"\n  count = 1\n  cpu_mhz = 0\n  memory_mib = 1\n}\n", "c.hcl:1: node \"a\": cpu_mhz"},
		"bad inventory":     {"gpu \"A100\" {\n  count = 0\n}\n", node(""), "n.hcl:2"},
		"quota over one":    {inv, node("") + "tenant \"t\" {\n  load = 1\n  gpu_quota = 2\n}\n", "c.hcl:7: tenant \"t\": gpu_quota"},
		"limit below":       {inv, node("") + "tenant \"t\" {\n  load = 1\n  gpu_quota = 0.5\n  gpu_limit = 0.2\n}\n", "c.hcl:7: tenant \"t\": gpu_limit"},
		"missing inventory": {"", node(""), "n.hcl"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.inv != "" {
				write(t, dir, "n.hcl", tc.inv)
			}
			_, err := Load(write(t, dir, "c.hcl", tc.cluster))
			must.ErrorContains(t, err, tc.want)
		})
	}
}
