package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/device-plugin/accel"
)

func TestProbeInventory(t *testing.T) {
	cfg := accel.DefaultConfig()
	cfg.Backends = []string{"inventory"}
	cfg.InventoryFile = "../../inventory/examples/pcie-a100-ascend.hcl"
	cfg.TopologyGrouping = accel.GroupingIsland
	var out bytes.Buffer
	must.NoError(t, run(cfg, 1, &out))
	var r report
	must.NoError(t, json.Unmarshal(out.Bytes(), &r))
	must.Len(t, 12, r.Devices)
	var ids []string
	for _, g := range r.Groups {
		ids = append(ids, g.ID)
	}
	must.Eq(t, []string{"huawei/npu/Ascend910B-island0", "nvidia/gpu/A100-island0", "nvidia/gpu/A100-island1"}, ids)
	must.Len(t, 1, r.Stats)
	must.Eq(t, "0", r.Reservation.Envs["ASCEND_VISIBLE_DEVICES"])
}

func TestProbeFailsWhenABackendFails(t *testing.T) {
	cfg := accel.DefaultConfig()
	cfg.Backends = []string{"inventory"}
	cfg.InventoryFile = "/nonexistent.hcl"
	var out bytes.Buffer
	must.ErrorContains(t, run(cfg, 0, &out), "backends reported errors")
	must.StrContains(t, out.String(), "no such file")
}

// TestProbePrintsProcesses: a device whose backend knows its process count
// shows it as the Processes statistic in the probe's stats rounds (here the
// inventory's scripted telemetry; on a GPU machine the nvml backend's
// running-process lists), and a device without a count shows none.
func TestProbePrintsProcesses(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../inventory/examples/pcie-a100-ascend.hcl")
	must.NoError(t, err)
	inv := filepath.Join(dir, "gpus.hcl")
	must.NoError(t, os.WriteFile(inv, src, 0o644))
	cfg := accel.DefaultConfig()
	cfg.Backends = []string{"inventory"}
	cfg.InventoryFile = inv
	var out bytes.Buffer
	must.NoError(t, run(cfg, 0, &out))
	var r report
	must.NoError(t, json.Unmarshal(out.Bytes(), &r))
	busy, quiet := r.Devices[0].ID, r.Devices[1].ID
	tel := fmt.Sprintf(`{"devices": {%q: {"utilization": 3, "memory_used_mib": 900, "processes": 2}}}`, busy)
	must.NoError(t, os.WriteFile(filepath.Join(dir, "gpus.telemetry.json"), []byte(tel), 0o644))

	out.Reset()
	must.NoError(t, run(cfg, 1, &out))
	var raw struct {
		Stats [][]struct {
			InstanceStats map[string]struct {
				Stats struct {
					Attributes map[string]struct {
						IntNumeratorVal *int64
					}
				}
			}
		} `json:"stats"`
	}
	must.NoError(t, json.Unmarshal(out.Bytes(), &raw))
	must.Len(t, 1, raw.Stats)
	found := map[string]*int64{}
	for _, g := range raw.Stats[0] {
		for id, st := range g.InstanceStats {
			if v, ok := st.Stats.Attributes[accel.StatProcesses]; ok {
				found[id] = v.IntNumeratorVal
			}
		}
	}
	must.MapContainsKey(t, found, busy)
	must.NotNil(t, found[busy])
	must.Eq(t, int64(2), *found[busy])
	must.MapNotContainsKey(t, found, quiet)
}
