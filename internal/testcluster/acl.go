package testcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
)

// aclHCL is the agent config that turns Nomad's ACL system on; servers and
// clients both need it (clients enforce ACLs on their own endpoints).
const aclHCL = "acl {\n  enabled = true\n}\n"

// agentExtra is the extra agent config of every agent of the cluster.
func (c *Cluster) agentExtra() string {
	if !c.aclOn {
		return ""
	}
	return aclHCL
}

// bootstrapACL bootstraps Nomad's ACL system once the leader is elected
// and makes c.API carry the management token. Nomad may answer the first
// bootstrap before its ACL state is ready; it is retried until ctx ends.
func (c *Cluster) bootstrapACL(ctx context.Context) error {
	if !c.aclOn {
		return nil
	}
	var last error
	err := Poll(ctx, 100*time.Millisecond, func() error {
		tok, _, err := c.API.ACLTokens().Bootstrap(nil)
		if err != nil {
			last = err
			return err
		}
		c.mgmt = tok
		return nil
	})
	if err != nil {
		return fmt.Errorf("bootstrapping ACLs: %w (last: %v)", err, last)
	}
	c.API.SetSecretID(c.mgmt.SecretID)
	return nil
}

// ManagementToken returns the secret of the bootstrap management token,
// or "" when the cluster runs without ACLs.
func (c *Cluster) ManagementToken() string {
	if c.mgmt == nil {
		return ""
	}
	return c.mgmt.SecretID
}

// CreatePolicy creates (or replaces) the ACL policy name with rules. It
// fails the test on error.
func (c *Cluster) CreatePolicy(name, rules string) {
	c.t.Helper()
	_, err := c.API.ACLPolicies().Upsert(&api.ACLPolicy{Name: name, Rules: rules}, nil)
	if err != nil {
		c.t.Fatalf("testcluster: creating ACL policy %s: %v", name, err)
	}
}

// CreateToken creates a client token holding policies and returns it
// (SecretID is what a caller sends). It fails the test on error.
func (c *Cluster) CreateToken(name string, policies ...string) *api.ACLToken {
	c.t.Helper()
	tok, _, err := c.API.ACLTokens().Create(&api.ACLToken{Name: name, Type: "client", Policies: policies}, nil)
	if err != nil {
		c.t.Fatalf("testcluster: creating ACL token %s: %v", name, err)
	}
	return tok
}

// DeleteToken revokes the token with accessor ID id.
func (c *Cluster) DeleteToken(id string) {
	c.t.Helper()
	if _, err := c.API.ACLTokens().Delete(id, nil); err != nil {
		c.t.Fatalf("testcluster: deleting ACL token %s: %v", id, err)
	}
}

// TenantPolicy returns the name and rules of the ACL policy that
// terraform/modules/tenant creates for namespace ns, rendered from the
// module's own main.tf (resource "nomad_acl_policy" "tenant"), so tests use
// exactly the policy tenants get.
func TenantPolicy(ns string) (name, rules string, err error) {
	root, err := RepoRoot()
	if err != nil {
		return "", "", err
	}
	path := filepath.Join(root, "terraform", "modules", "tenant", "main.tf")
	src, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("reading the tenant module: %w", err)
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return "", "", fmt.Errorf("parsing %s: %s", path, diags.Error())
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"var": cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(ns)})}}
	return renderPolicy(f.Body, ctx, path)
}

// renderPolicy evaluates name and rules_hcl of the tenant policy resource.
func renderPolicy(body hcl.Body, ctx *hcl.EvalContext, path string) (string, string, error) {
	content, _, diags := body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "resource", LabelNames: []string{"type", "name"}}}})
	if diags.HasErrors() {
		return "", "", fmt.Errorf("reading %s: %s", path, diags.Error())
	}
	for _, b := range content.Blocks {
		if b.Labels[0] != "nomad_acl_policy" || b.Labels[1] != "tenant" {
			continue
		}
		attrs, _, diags := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{
			{Name: "name", Required: true}, {Name: "rules_hcl", Required: true}}})
		if diags.HasErrors() {
			return "", "", fmt.Errorf("reading the tenant policy in %s: %s", path, diags.Error())
		}
		name, diags := attrs.Attributes["name"].Expr.Value(ctx)
		if diags.HasErrors() {
			return "", "", fmt.Errorf("evaluating the policy name: %s", diags.Error())
		}
		rules, diags := attrs.Attributes["rules_hcl"].Expr.Value(ctx)
		if diags.HasErrors() {
			return "", "", fmt.Errorf("evaluating the policy rules: %s", diags.Error())
		}
		return name.AsString(), rules.AsString(), nil
	}
	return "", "", fmt.Errorf(`%s has no resource "nomad_acl_policy" "tenant"`, path)
}

// TenantToken creates, in a cluster with ACLs, the tenant policy of
// terraform/modules/tenant for namespace ns and a client token holding it,
// as `terraform apply` of the module with create_token = true would. It
// returns the token's secret.
func (c *Cluster) TenantToken(ns string) string {
	c.t.Helper()
	name, rules, err := TenantPolicy(ns)
	if err != nil {
		c.t.Fatalf("testcluster: %v", err)
	}
	c.CreatePolicy(name, rules)
	return c.CreateToken(name, name).SecretID
}
