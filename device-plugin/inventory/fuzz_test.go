package inventory

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/shoenig/test/must"
	"github.com/zclconf/go-cty/cty"

	"github.com/allot-sh/allot/device-plugin/accel"
)

const fuzzFile = "fuzz.hcl"

// FuzzInventory feeds arbitrary files to Parse and expands what it
// accepts. Seeds: testdata/fuzz/FuzzInventory (the examples, the test
// files, the audit #26 inputs). Properties: it never panics; every error
// names fuzz.hcl with a line and column; an accepted file expands into the
// expected number of devices with distinct IDs, gives the same devices
// twice, and gives the same devices again after being written back out
// with hclwrite and parsed anew.
func FuzzInventory(f *testing.F) {
	f.Fuzz(func(t *testing.T, src []byte) {
		inv, diags := Parse(fuzzFile, src, "fuzz")
		if diags.HasErrors() {
			checkDiags(t, diags)
			return
		}
		devs := inv.Devices()
		checkDevices(t, inv, devs)
		must.Eq(t, devs, inv.Devices())
		healthy := append([]accel.Device(nil), devs...)
		_ = applyHealth(healthy, inv.Unhealthy, fuzzFile)
		checkDevices(t, inv, healthy)

		out := render(inv)
		back, diags := Parse("back.hcl", out, "other")
		must.False(t, diags.HasErrors(), must.Sprintf("re-rendered file refused: %v\n%s", diags, out))
		must.Eq(t, devs, back.Devices(), must.Sprintf("re-rendered:\n%s", out))
		must.Eq(t, append([]string{}, inv.Unhealthy...), append([]string{}, back.Unhealthy...))
	})
}

var sourceShape = regexp.MustCompile(`^` + regexp.QuoteMeta(fuzzFile) + `:[1-9][0-9]*,[1-9][0-9]*$`)

// checkDiags checks that every error names the file and a line, and that
// the backend's error says file:line,col.
func checkDiags(t *testing.T, diags hcl.Diagnostics) {
	t.Helper()
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		must.NotNil(t, d.Subject, must.Sprintf("diagnostic without a position: %s", d.Summary))
		must.Eq(t, fuzzFile, d.Subject.Filename)
		must.Positive(t, d.Subject.Start.Line)
	}
	var fe *accel.FingerprintError
	must.True(t, errors.As(diagError(fuzzFile, diags), &fe))
	must.RegexMatch(t, sourceShape, fe.Source)
}

func checkDevices(t *testing.T, inv *Inventory, devs []accel.Device) {
	t.Helper()
	want := 0
	for _, m := range inv.Models {
		want += m.Count
		for _, mig := range m.MIG {
			want += len(mig.GPUs) * mig.Count
		}
	}
	must.Len(t, want, devs)
	ids := map[string]bool{}
	for _, d := range devs {
		must.False(t, ids[d.ID], must.Sprintf("device ID %s twice", d.ID))
		ids[d.ID] = true
		must.NonNegative(t, d.Index)
		must.NonNegative(t, d.MemoryMiB)
		for _, s := range []string{d.ID, d.Vendor, d.Model, d.MIGProfile, d.DriverVersion, d.CUDAVersion, d.ComputeCapability, d.HealthDesc} {
			must.True(t, utf8.ValidString(s), must.Sprintf("%q is not UTF-8: Nomad's plugin protocol cannot carry it", s))
		}
		must.False(t, strings.Contains(d.Model, "/") || strings.Contains(d.Vendor, "/"), must.Sprintf("%s/%s splits a device ID", d.Vendor, d.Model))
		if d.MIGParent != "" {
			must.True(t, ids[d.MIGParent], must.Sprintf("MIG %s before its parent %s", d.ID, d.MIGParent))
		}
	}
}

// render writes an inventory back out as HCL.
func render(inv *Inventory) []byte {
	f := hclwrite.NewEmptyFile()
	b := f.Body()
	b.SetAttributeValue("seed", cty.StringVal(inv.Seed))
	b.SetAttributeValue("driver_version", cty.StringVal(inv.DriverVersion))
	b.SetAttributeValue("cuda_version", cty.StringVal(inv.CUDAVersion))
	b.SetAttributeValue("unhealthy", stringList(inv.Unhealthy))
	for _, m := range inv.Models {
		mb := b.AppendNewBlock(m.Kind, []string{m.Name}).Body()
		mb.SetAttributeValue("vendor", cty.StringVal(m.Vendor))
		mb.SetAttributeValue("count", cty.NumberIntVal(int64(m.Count)))
		mb.SetAttributeValue("memory_mib", cty.NumberIntVal(m.MemoryMiB))
		mb.SetAttributeValue("compute_capability", cty.StringVal(m.ComputeCapability))
		mb.SetAttributeValue("power_limit_w", cty.NumberIntVal(int64(m.PowerLimitW)))
		mb.SetAttributeValue("topology", cty.StringVal(m.Topology))
		mb.SetAttributeValue("nvlink_links", cty.NumberIntVal(int64(m.NVLinkLinks)))
		if len(m.Islands) > 0 {
			isl := make([]cty.Value, len(m.Islands))
			for i, members := range m.Islands {
				isl[i] = ints(members)
			}
			mb.SetAttributeValue("islands", cty.TupleVal(isl))
		}
		mb.SetAttributeValue("numa_nodes", ints(m.NUMANodes))
		for _, mig := range m.MIG {
			gb := mb.AppendNewBlock("mig", []string{mig.Profile}).Body()
			gb.SetAttributeValue("gpus", ints(mig.GPUs))
			gb.SetAttributeValue("count", cty.NumberIntVal(int64(mig.Count)))
			gb.SetAttributeValue("memory_mib", cty.NumberIntVal(mig.MemoryMiB))
		}
	}
	return f.Bytes()
}

func ints(ns []int) cty.Value {
	vals := make([]cty.Value, len(ns))
	for i, n := range ns {
		vals[i] = cty.NumberIntVal(int64(n))
	}
	return cty.TupleVal(vals)
}

func stringList(ss []string) cty.Value {
	vals := make([]cty.Value, len(ss))
	for i, s := range ss {
		vals[i] = cty.StringVal(s)
	}
	return cty.TupleVal(vals)
}
