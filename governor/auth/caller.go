package auth

import (
	"context"
	"fmt"

	"github.com/hashicorp/nomad/acl"
)

// Caller is the identity of one request, resolved the way Nomad resolves
// it. Its checks are Nomad's own acl package, so the governor allows
// exactly what Nomad would allow the same token.
type Caller struct {
	// AccessorID and Name describe the token ("" for anonymous callers and
	// when ACLs are disabled). They are safe to log; the secret is not kept.
	AccessorID string
	Name       string
	// Type is "management", "client", "anonymous", or "" when Nomad's ACLs
	// are disabled.
	Type string

	acl      *acl.ACL
	disabled bool
	scrape   bool
}

// Type values of Caller.
const (
	TypeManagement = "management"
	TypeClient     = "client"
	TypeAnonymous  = "anonymous"
)

// ACLsDisabled reports that Nomad's ACL system is off: every request is
// allowed, as Nomad allows it.
func (c *Caller) ACLsDisabled() bool { return c.disabled }

// Management reports a management token (or ACLs disabled): allowed
// everything.
func (c *Caller) Management() bool { return c.disabled || (c.acl != nil && c.acl.IsManagement()) }

// Anonymous reports a request without a token (when ACLs are on); it has
// the rights of Nomad's "anonymous" policy, if there is one.
func (c *Caller) Anonymous() bool { return c.Type == TypeAnonymous }

// Scrape reports the governor's own metrics_token: it may read every
// series of /metrics and nothing else.
func (c *Caller) Scrape() bool { return c.scrape }

// Allowed reports whether the caller holds the namespace capability
// (acl.NamespaceCapability*, e.g. "submit-job") in ns.
func (c *Caller) Allowed(ns, capability string) bool {
	if c.disabled {
		return true
	}
	if c.acl == nil {
		return false
	}
	return c.acl.AllowNamespaceOperation(ns, capability)
}

// CanRead reports whether the caller may read jobs in ns ("read-job"):
// the bar for seeing anything of a namespace on the governor's API, in
// decisions and in metrics.
func (c *Caller) CanRead(ns string) bool {
	return c.Allowed(ns, acl.NamespaceCapabilityReadJob)
}

// ACL is the compiled Nomad ACL (nil when ACLs are disabled or for the
// metrics token), for checks beyond namespaces (node, operator, ...).
func (c *Caller) ACL() *acl.ACL { return c.acl }

type ctxKey struct{}

// NewContext returns ctx carrying c, so one request is authenticated once.
func NewContext(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// FromContext returns the Caller NewContext stored, or nil.
func FromContext(ctx context.Context) *Caller {
	c, _ := ctx.Value(ctxKey{}).(*Caller)
	return c
}

// OperatorRead reports whether the caller may read operator data
// (Nomad's operator:read): the bar for cluster-wide series on /metrics.
func (c *Caller) OperatorRead() bool {
	return c.Management() || (c.acl != nil && c.acl.AllowOperatorRead())
}

// NewCaller returns a client caller with a compiled ACL (nil ACL: allowed
// nothing). For callers resolved elsewhere and for tests.
func NewCaller(accessorID, name string, a *acl.ACL) *Caller {
	return &Caller{AccessorID: accessorID, Name: name, Type: TypeClient, acl: a}
}

// CallerFromRules compiles Nomad ACL policy rules into a client caller,
// as Nomad compiles a token's policies (fixtures and examples).
func CallerFromRules(name string, rules ...string) (*Caller, error) {
	var policies []*acl.Policy
	for _, r := range rules {
		p, err := acl.Parse(r)
		if err != nil {
			return nil, fmt.Errorf("parsing policy rules: %w", err)
		}
		policies = append(policies, p)
	}
	a, err := acl.NewACL(false, policies)
	if err != nil {
		return nil, fmt.Errorf("compiling policies: %w", err)
	}
	return NewCaller("", name, a), nil
}

// Unrestricted returns the caller of a cluster whose ACLs are disabled.
func Unrestricted() *Caller { return &Caller{disabled: true} }
