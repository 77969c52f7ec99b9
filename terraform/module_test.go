package terraform

import (
	"sort"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/acl"
	"github.com/shoenig/test/must"
	"github.com/zclconf/go-cty/cty"

	"github.com/allot-sh/allot/governor/quota"
)

// metaInputs are the tenant module's variables it passes to ./meta.
var metaInputs = []string{"cohort", "weight", "quota", "limit", "lend", "classes", "default_class", "known_classes", "extra_meta"}

// TestTenantPassesMetaInputs checks that modules/tenant declares every meta
// input with the type and default of ./meta, so the validation applies to
// exactly what the caller wrote.
func TestTenantPassesMetaInputs(t *testing.T) {
	tenant, err := loadModule("modules/tenant")
	must.NoError(t, err)
	meta, err := loadModule(metaDir)
	must.NoError(t, err)
	must.Eq(t, sortedKeys(meta.vars), sorted(metaInputs))
	for _, name := range metaInputs {
		tv, mv := tenant.vars[name], meta.vars[name]
		must.NotNil(t, tv, must.Sprintf("modules/tenant lacks variable %s", name))
		must.True(t, tv.typ.Equals(mv.typ), must.Sprintf("%s: type %s vs %s", name, tv.typ.FriendlyName(), mv.typ.FriendlyName()))
		must.Eq(t, mv.def == nil, tv.def == nil, must.Sprintf("%s: default", name))
		if mv.def != nil {
			must.True(t, tv.def.RawEquals(*mv.def), must.Sprintf("%s: default %#v vs %#v", name, *tv.def, *mv.def))
		}
	}
}

// TestTenantACLPolicy renders the policy of modules/tenant and parses it
// with Nomad's own ACL parser: the tenant may submit and read jobs in its
// namespace and has no rule anywhere else.
func TestTenantACLPolicy(t *testing.T) {
	tenant, err := loadModule("modules/tenant")
	must.NoError(t, err)
	rules := resourceAttr(t, tenant, "nomad_acl_policy", "tenant", "rules_hcl")
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("ml-research")})}}
	v, diags := rules.Value(ctx)
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	policy, err := acl.Parse(v.AsString())
	must.NoError(t, err)
	must.SliceLen(t, 1, policy.Namespaces)
	ns := policy.Namespaces[0]
	must.Eq(t, "ml-research", ns.Name)
	for _, c := range []string{acl.NamespaceCapabilitySubmitJob, acl.NamespaceCapabilityReadJob, acl.NamespaceCapabilityListJobs,
		acl.NamespaceCapabilityReadLogs, acl.NamespaceCapabilityDispatchJob, acl.NamespaceCapabilityAllocLifecycle} {
		must.SliceContains(t, ns.Capabilities, c)
	}
	for _, c := range []string{acl.NamespaceCapabilityAllocExec, acl.NamespaceCapabilityAllocNodeExec, acl.NamespaceCapabilitySentinelOverride} {
		must.SliceNotContains(t, ns.Capabilities, c)
	}
	must.Nil(t, policy.Node)
	must.Nil(t, policy.Agent)
	must.Nil(t, policy.Operator)
	must.SliceEmpty(t, policy.NodePools)
}

// TestPlatformExample evaluates each tenant of examples/platform through
// the meta module and the governor's parser: three valid tenants in one
// cohort.
func TestPlatformExample(t *testing.T) {
	ex, err := loadModule("examples/platform")
	must.NoError(t, err)
	meta, err := loadModule(metaDir)
	must.NoError(t, err)
	blocks := moduleBlocks(t, ex)
	must.MapLen(t, 3, blocks)
	cohorts := map[string]bool{}
	for name, attrs := range blocks {
		t.Run(name, func(t *testing.T) {
			in := map[string]cty.Value{}
			for _, k := range metaInputs {
				if a, ok := attrs[k]; ok {
					v, diags := a.Expr.Value(nil)
					must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
					in[k] = v
				}
			}
			res, err := meta.eval(in)
			must.NoError(t, err)
			must.SliceEmpty(t, res.failures)
			m, err := stringMap(res.locals["meta"])
			must.NoError(t, err)
			ten, err := quota.Parse(name, m, knownClasses())
			must.NoError(t, err)
			must.Positive(t, ten.Quota["gpu"])
			cohorts[ten.Cohort] = true
		})
	}
	must.Eq(t, map[string]bool{"research": true}, cohorts)
}

// moduleBlocks returns the attributes of every module block of m's files.
func moduleBlocks(t *testing.T, m *module) map[string]hcl.Attributes {
	t.Helper()
	out := map[string]hcl.Attributes{}
	for _, f := range m.files {
		content, _, diags := f.Body.PartialContent(rootSchema)
		must.False(t, diags.HasErrors())
		for _, b := range content.Blocks.OfType("module") {
			attrs, diags := b.Body.JustAttributes()
			must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
			out[b.Labels[0]] = attrs
		}
	}
	return out
}

// resourceAttr returns one attribute expression of a resource block.
func resourceAttr(t *testing.T, m *module, typ, name, attr string) hcl.Expression {
	t.Helper()
	for _, f := range m.files {
		content, _, diags := f.Body.PartialContent(rootSchema)
		must.False(t, diags.HasErrors())
		for _, b := range content.Blocks.OfType("resource") {
			if b.Labels[0] != typ || b.Labels[1] != name {
				continue
			}
			attrs, _ := b.Body.JustAttributes()
			a, ok := attrs[attr]
			must.True(t, ok, must.Sprintf("%s.%s has no %s", typ, name, attr))
			return a.Expr
		}
	}
	t.Fatalf("no resource %s.%s", typ, name)
	return nil
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
