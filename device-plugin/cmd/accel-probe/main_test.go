package main

import (
	"bytes"
	"encoding/json"
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
