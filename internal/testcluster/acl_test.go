package testcluster

import (
	"testing"

	"github.com/hashicorp/nomad/acl"
	"github.com/shoenig/test/must"
)

// TestTenantPolicyRendersTheModule reads the tenant policy from
// terraform/modules/tenant/main.tf and checks it with Nomad's parser.
func TestTenantPolicyRendersTheModule(t *testing.T) {
	name, rules, err := TenantPolicy("ml-research")
	must.NoError(t, err)
	must.Eq(t, "tenant-ml-research", name)
	p, err := acl.Parse(rules)
	must.NoError(t, err)
	must.SliceLen(t, 1, p.Namespaces)
	must.Eq(t, "ml-research", p.Namespaces[0].Name)
	must.SliceContains(t, p.Namespaces[0].Capabilities, acl.NamespaceCapabilitySubmitJob)
}
