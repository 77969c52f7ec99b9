package terraform

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/quota"
)

const metaDir = "modules/tenant/meta"

// metaCase is one set of module inputs (tfvars text) and what must come of
// it.
type metaCase struct {
	vars string
	// valid: Terraform accepts the inputs. When it does, the governor's
	// parser must accept the meta, and check inspects the tenant.
	valid bool
	// stricter marks inputs Terraform rejects although the parser would
	// accept them (exotic spellings); every other rejection must match a
	// parser rejection.
	stricter bool
	check    func(t *testing.T, ten quota.Tenant, meta map[string]string)
}

func ok(vars string, check func(t *testing.T, ten quota.Tenant, meta map[string]string)) metaCase {
	return metaCase{vars: vars, valid: true, check: check}
}

func bad(vars string) metaCase      { return metaCase{vars: vars} }
func stricter(vars string) metaCase { return metaCase{vars: vars, stricter: true} }

// metaCases is shared with the test that runs real Terraform.
func metaCases() map[string]metaCase {
	return map[string]metaCase{
		"defaults": ok(``, func(t *testing.T, ten quota.Tenant, meta map[string]string) {
			must.Eq(t, map[string]string{"allot.cohort": "default", "allot.weight": "1"}, meta)
			must.Eq(t, "standard", ten.DefaultClass)
		}),
		"full tenant": ok(`
cohort        = "research"
weight        = 2.5
quota         = { gpu = 8, "nvidia/gpu/H200" = 4, memory = "256GiB", cpu = "1.5GHz" }
limit         = { gpu = 16, memory = "0.5TiB", cpu = 4000 }
lend          = { gpu = 4 }
classes       = ["production", "high"]
default_class = "high"
extra_meta    = { owner = "ml-platform" }
`, func(t *testing.T, ten quota.Tenant, meta map[string]string) {
			must.Eq(t, "research", ten.Cohort)
			must.Eq(t, 2.5, ten.Weight)
			must.Eq(t, quota.Vector{"gpu": 8, "nvidia/gpu/H200": 4, "memory": 262144, "cpu": 1500}, ten.Quota)
			must.Eq(t, quota.Vector{"gpu": 16, "memory": 524288, "cpu": 4000}, ten.Limit)
			must.Eq(t, quota.Vector{"gpu": 4}, ten.Lend)
			must.Eq(t, []string{"production", "high"}, ten.Classes)
			must.Eq(t, "high", ten.DefaultClass)
			must.Eq(t, "ml-platform", meta["owner"])
			must.Eq(t, "256GiB", meta["allot.quota.memory"])
		}),
		"memory units": ok(`quota = { memory = "2048KiB" }
limit = { memory = "1 GiB" }`, func(t *testing.T, ten quota.Tenant, _ map[string]string) {
			must.Eq(t, quota.Vector{"memory": 2}, ten.Quota)
			must.Eq(t, quota.Vector{"memory": 1024}, ten.Limit)
		}),
		"decimal units to whole MiB": ok(`quota = { memory = "1.5GiB", cpu = "2.5GHz" }`, func(t *testing.T, ten quota.Tenant, _ map[string]string) {
			must.Eq(t, quota.Vector{"memory": 1536, "cpu": 2500}, ten.Quota)
		}),
		"npu and ascend": ok(`quota = { npu = 8, "huawei/npu/Ascend910B" = 8 }`, func(t *testing.T, ten quota.Tenant, _ map[string]string) {
			must.Eq(t, quota.Vector{"npu": 8, "huawei/npu/Ascend910B": 8}, ten.Quota)
		}),
		"limit equal to quota":         ok(`quota = { gpu = 4 }`+"\n"+`limit = { gpu = 4 }`, nil),
		"limit without quota":          ok(`limit = { gpu = 4 }`, nil),
		"zero quota":                   ok(`quota = { gpu = 0 }`, nil),
		"negative quota":               bad(`quota = { gpu = -1 }`),
		"unknown resource":             bad(`quota = { tpu = 4 }`),
		"device id with two parts":     bad(`quota = { "nvidia/gpu" = 4 }`),
		"device id with a space":       bad(`quota = { "nvidia/gpu/H 200" = 4 }`),
		"fractional gpu":               bad(`quota = { gpu = "1.5" }`),
		"memory unit on gpu":           bad(`quota = { gpu = "8GiB" }`),
		"cpu unit on memory":           bad(`quota = { memory = "2GHz" }`),
		"lowercase unit":               bad(`quota = { memory = "64gib" }`),
		"not a whole MiB":              bad(`quota = { memory = "1KiB" }`),
		"garbage amount":               bad(`quota = { gpu = "lots" }`),
		"empty amount":                 bad(`quota = { gpu = "" }`),
		"int64 overflow":               bad(`quota = { gpu = "9223372036854775808" }`),
		"limit below quota":            bad(`quota = { gpu = 8 }` + "\n" + `limit = { gpu = 4 }`),
		"limit below quota in units":   bad(`quota = { memory = "2GiB" }` + "\n" + `limit = { memory = 1024 }`),
		"lend above quota":             bad(`quota = { gpu = 2 }` + "\n" + `lend = { gpu = 3 }`),
		"lend without quota":           bad(`lend = { gpu = 1 }`),
		"bad limit amount":             bad(`limit = { gpu = "x" }`),
		"bad lend resource":            bad(`lend = { "a/b" = 1 }`),
		"unknown class":                bad(`classes = ["gold"]`),
		"unknown default class":        bad(`default_class = "gold"`),
		"zero weight":                  bad(`weight = 0`),
		"negative weight":              bad(`weight = -2`),
		"empty cohort":                 bad(`cohort = "  "`),
		"allot key in extra meta":      bad(`extra_meta = { "allot.quota.gpu" = "x" }`),
		"plus sign (parser accepts)":   stricter(`quota = { gpu = "+8" }`),
		"leading dot (parser accepts)": stricter(`quota = { memory = ".5GiB" }`),
		"exponent (parser accepts)":    stricter(`quota = { memory = "1e1GiB" }`),
	}
}

// TestMetaMatchesGovernorParser evaluates the tenant module's meta
// expression and validation with HCL, as Terraform would, and feeds the
// meta to governor/quota.Parse: valid inputs must parse to the tenant the
// inputs describe, and inputs the module rejects must be rejected by the
// parser as well.
func TestMetaMatchesGovernorParser(t *testing.T) {
	m, err := loadModule(metaDir)
	must.NoError(t, err)
	classes := knownClasses()
	for name, tc := range metaCases() {
		t.Run(name, func(t *testing.T) {
			in, err := parseVars(tc.vars)
			must.NoError(t, err)
			res, err := m.eval(in)
			must.NoError(t, err)
			meta, err := stringMap(res.locals["meta"])
			must.NoError(t, err, must.Sprint("the meta expression must evaluate even for invalid inputs"))
			ten, perr := quota.Parse("tenant", meta, classes)
			switch {
			case tc.valid:
				must.SliceEmpty(t, res.failures)
				must.NoError(t, perr, must.Sprintf("meta %v", meta))
				if tc.check != nil {
					tc.check(t, ten, meta)
				}
			case tc.stricter:
				must.SliceNotEmpty(t, res.failures, must.Sprint("Terraform must reject it"))
				must.NoError(t, perr, must.Sprint("a stricter case must be one the parser accepts; otherwise mark it bad"))
			default:
				must.SliceNotEmpty(t, res.failures, must.Sprintf("Terraform accepted what the parser rejects: %v", perr))
				must.Error(t, perr, must.Sprintf("the parser accepted meta %v that Terraform rejects: %v", meta, res.failures))
			}
		})
	}
}

func knownClasses() map[string]bool {
	cfg := config.Default()
	out := map[string]bool{}
	for _, n := range cfg.ClassNames() {
		out[n] = true
	}
	return out
}

// TestErrorMessagesNameTheInput checks that a rejection says which input
// is wrong.
func TestErrorMessagesNameTheInput(t *testing.T) {
	m, err := loadModule(metaDir)
	must.NoError(t, err)
	tests := map[string]struct{ vars, want string }{
		"quota resource": {`quota = { tpu = 1 }`, "quota: unknown resource"},
		"limit amount":   {`limit = { gpu = "x" }`, "limit: an amount is"},
		"limit < quota":  {"quota = { gpu = 2 }\nlimit = { gpu = 1 }", "limit: every limit must be at least the quota"},
		"class":          {`classes = ["gold"]`, "classes: every class must be one of known_classes"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in, err := parseVars(tc.vars)
			must.NoError(t, err)
			res, err := m.eval(in)
			must.NoError(t, err)
			must.StrContains(t, strings.Join(res.failures, "\n"), tc.want)
		})
	}
}
