package inventory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// writeInventory writes src to a temp file named name and returns its path.
func writeInventory(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	must.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	return p
}

func fingerprint(t *testing.T, b *Backend) []accel.Device {
	t.Helper()
	devs, err := b.Fingerprint(context.Background())
	must.NoError(t, err)
	return devs
}

func byModel(devs []accel.Device, model string) []accel.Device {
	var out []accel.Device
	for _, d := range devs {
		if d.Model == model {
			out = append(out, d)
		}
	}
	return out
}

func TestDevNodeExample(t *testing.T) {
	devs := fingerprint(t, New("examples/dev-node.hcl"))
	h200 := byModel(devs, "H200")
	npus := byModel(devs, "Ascend910B")
	must.Len(t, 8, h200)
	must.Len(t, 8, npus)
	for i, d := range h200 {
		must.StrHasPrefix(t, "GPU-", d.ID)
		must.Eq(t, accel.TopologyNVSwitch, d.Topology)
		must.Eq(t, 18, d.NVLinkLinks)
		must.Eq(t, 0, d.Island)
		must.Eq(t, i, d.Index)
		must.Eq(t, i/4, d.NUMANode)
		must.Eq(t, int64(143771), d.MemoryMiB)
		must.True(t, d.Healthy)
	}
	for i, d := range npus {
		must.Eq(t, "huawei", d.Vendor)
		must.Eq(t, "npu", d.Type)
		must.Eq(t, i, d.Index)
	}
}

func TestIDsAreDeterministicAndSeeded(t *testing.T) {
	src := `gpu "H100" { count = 2 }`
	a := fingerprint(t, New(writeInventory(t, "node-a.hcl", src)))
	again := fingerprint(t, New(writeInventory(t, "node-a.hcl", src)))
	b := fingerprint(t, New(writeInventory(t, "node-b.hcl", src)))
	must.Eq(t, a[0].ID, again[0].ID)
	must.NotEq(t, a[0].ID, a[1].ID)
	must.NotEq(t, a[0].ID, b[0].ID, must.Sprint("the file name seeds the IDs"))
	seeded := fingerprint(t, New(writeInventory(t, "x.hcl", `seed = "node-a"`+"\n"+src)))
	must.Eq(t, a[0].ID, seeded[0].ID)
}

func TestTopologies(t *testing.T) {
	tests := map[string]struct {
		src         string
		wantTopo    []string
		wantIsland  []int
		wantLinks   []int
		wantGrouped []string // group names under island grouping
	}{
		"nvswitch box is one island": {
			src:         `gpu "H200" { count = 4 }`,
			wantTopo:    []string{"nvswitch", "nvswitch", "nvswitch", "nvswitch"},
			wantIsland:  []int{0, 0, 0, 0},
			wantLinks:   []int{18, 18, 18, 18},
			wantGrouped: []string{"H200-island0"},
		},
		"nvlink pairs": {
			src:         "gpu \"A100\" {\n count = 4\n topology = \"nvlink\"\n islands = [[0, 1], [2, 3]]\n}",
			wantTopo:    []string{"nvlink", "nvlink", "nvlink", "nvlink"},
			wantIsland:  []int{0, 0, 1, 1},
			wantLinks:   []int{12, 12, 12, 12},
			wantGrouped: []string{"A100-island0", "A100-island1"},
		},
		"nvlink pair plus a lone pcie card": {
			src:         "gpu \"A100\" {\n count = 3\n topology = \"nvlink\"\n islands = [[1, 2]]\n nvlink_links = 4\n}",
			wantTopo:    []string{"pcie", "nvlink", "nvlink"},
			wantIsland:  []int{1, 0, 0},
			wantLinks:   []int{0, 4, 4},
			wantGrouped: []string{"A100-island0", "A100-island1"},
		},
		"pcie only": {
			src:         "gpu \"L40S\" {\n count = 2\n topology = \"pcie\"\n}",
			wantTopo:    []string{"pcie", "pcie"},
			wantIsland:  []int{0, 1},
			wantLinks:   []int{0, 0},
			wantGrouped: []string{"L40S-island0", "L40S-island1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			devs := fingerprint(t, New(writeInventory(t, "n.hcl", tc.src)))
			for i, d := range devs {
				must.Eq(t, tc.wantTopo[i], d.Topology, must.Sprintf("device %d", i))
				must.Eq(t, tc.wantIsland[i], d.Island, must.Sprintf("device %d", i))
				must.Eq(t, tc.wantLinks[i], d.NVLinkLinks, must.Sprintf("device %d", i))
			}
			var names []string
			for _, g := range accel.BuildGroups(devs, accel.GroupingIsland) {
				names = append(names, g.Name)
			}
			must.Eq(t, tc.wantGrouped, names)
		})
	}
}

func TestMIG(t *testing.T) {
	src := `
gpu "A100" {
  count      = 2
  memory_mib = 40960
  mig "3g.20gb" {
    gpus       = [1]
    count      = 2
    memory_mib = 20096
  }
}`
	devs := fingerprint(t, New(writeInventory(t, "n.hcl", src)))
	must.Len(t, 4, devs)
	must.False(t, devs[0].MIGEnabled)
	must.True(t, devs[1].MIGEnabled)
	for _, d := range devs[2:] {
		must.StrHasPrefix(t, "MIG-", d.ID)
		must.Eq(t, "3g.20gb", d.MIGProfile)
		must.Eq(t, devs[1].ID, d.MIGParent)
		must.Eq(t, 1, d.Index)
	}
	groups := accel.BuildGroups(devs, accel.GroupingNone)
	must.Len(t, 2, groups)
	must.Eq(t, "A100", groups[0].Name)
	must.Len(t, 1, groups[0].Devices, must.Sprint("the MIG-mode GPU is offered only as instances"))
	must.Eq(t, "A100-3g.20gb", groups[1].Name)
	must.Len(t, 2, groups[1].Devices)
}

func TestUnhealthyListIsReReadEveryFingerprint(t *testing.T) {
	path := writeInventory(t, "n.hcl", `gpu "H200" { count = 2 }`)
	b := New(path)
	devs := fingerprint(t, b)
	must.True(t, devs[0].Healthy && devs[1].Healthy)

	must.NoError(t, os.WriteFile(path, []byte(`gpu "H200" { count = 2 }
unhealthy = ["H200[1]: XID 79", "`+devs[0].ID+`", "GPU-gone"]`), 0o644))
	devs = fingerprint(t, b)
	must.False(t, devs[0].Healthy)
	must.StrContains(t, devs[0].HealthDesc, "listed unhealthy in "+path)
	must.False(t, devs[1].Healthy)
	must.Eq(t, "XID 79", devs[1].HealthDesc)

	must.NoError(t, os.WriteFile(path, []byte(`gpu "H200" { count = 2 }`), 0o644))
	devs = fingerprint(t, b)
	must.True(t, devs[0].Healthy && devs[1].Healthy)
}

func TestBadFilesNameFileAndLine(t *testing.T) {
	tests := map[string]struct {
		src      string
		wantSrc  string // suffix after the path
		wantText string
	}{
		"syntax error":        {src: "gpu \"H200\" {\n  count = \n}\n", wantSrc: ":2,11", wantText: "Invalid expression"},
		"unknown attribute":   {src: "gpu \"H200\" {\n  cuont = 8\n}\n", wantSrc: ":2,3", wantText: `"cuont" is not an inventory attribute`},
		"wrong type":          {src: "gpu \"H200\" {\n  count = \"many\"\n}\n", wantSrc: ":2,12", wantText: "number is required"},
		"unknown topology":    {src: "gpu \"H200\" {\n  topology = \"mesh\"\n}\n", wantSrc: ":2,3", wantText: `"mesh"`},
		"numa length":         {src: "gpu \"H200\" {\n  count = 2\n  numa_nodes = [0]\n}\n", wantSrc: ":3,3", wantText: "one NUMA node per device"},
		"island out of range": {src: "gpu \"A\" {\n  count = 2\n  topology = \"nvlink\"\n  islands = [[0, 5]]\n}\n", wantSrc: ":4,3", wantText: "out of range"},
		"unlabelled block":    {src: "gpu {\n}\n", wantSrc: ":1,1", wantText: "one label"},
		"unknown block":       {src: "tpu \"v5\" {\n}\n", wantSrc: ":1,1", wantText: `"tpu" blocks`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeInventory(t, "bad.hcl", tc.src)
			_, err := New(path).Fingerprint(context.Background())
			var fe *accel.FingerprintError
			must.True(t, errors.As(err, &fe), must.Sprintf("error %v", err))
			must.Eq(t, path+tc.wantSrc, fe.Source)
			must.StrContains(t, err.Error(), tc.wantText)
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := New("/nonexistent/inv.hcl").Fingerprint(context.Background())
		var fe *accel.FingerprintError
		must.True(t, errors.As(err, &fe))
		must.True(t, errors.Is(err, os.ErrNotExist))
	})
}

func TestSyntheticStatsArePlausibleAndRepeatable(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	b := New(writeInventory(t, "n.hcl", `gpu "H200" {
  count = 8
  memory_mib = 143771
  power_limit_w = 700
}`), WithClock(func() time.Time { return at }))
	devs := fingerprint(t, b)
	s1, err := b.Stats(context.Background(), devs)
	must.NoError(t, err)
	s2, _ := b.Stats(context.Background(), devs)
	must.Eq(t, s1, s2)
	distinct := map[float64]bool{}
	for _, d := range devs {
		s := s1[d.ID]
		must.Between(t, 5, s.UtilizationPct, 90)
		must.Between(t, 0, s.MemoryUsedMiB, d.MemoryMiB)
		must.Between(t, 0, s.PowerW, 700)
		must.Between(t, 30, s.TemperatureC, 80)
		must.Eq(t, at, s.Timestamp)
		distinct[s.UtilizationPct] = true
	}
	must.Greater(t, 1, len(distinct), must.Sprint("devices should not all move in lockstep"))
}

func TestExamplesParse(t *testing.T) {
	files, err := filepath.Glob("examples/*.hcl")
	must.NoError(t, err)
	must.SliceNotEmpty(t, files)
	for _, f := range files {
		_, err := New(f).Load()
		must.NoError(t, err, must.Sprint(f))
		must.True(t, strings.HasSuffix(f, ".hcl"))
	}
}
