package proxy

import (
	"errors"
	"net/http"

	"github.com/allot-sh/allot/governor/auth"
)

// Authorizer checks, before any admission work, that the holder of a
// token holds one of the capabilities Nomad will demand for the route, in
// the namespace Nomad will use. It returns nil when allowed and an error
// wrapping auth.ErrPermissionDenied (403) or auth.ErrUnavailable (503)
// otherwise.
type Authorizer interface {
	// Authorize returns the token's accessor ID (for the governor's
	// record of who submitted a job; "" when unknown).
	Authorize(secret, ns string, capabilities []string) (accessor string, err error)
}

// NomadACL authorizes with governor/auth: the token is resolved through
// Nomad's ACL API and its policies evaluated with Nomad's acl package.
type NomadACL struct{ Auth *auth.Authenticator }

// Authorize implements Authorizer.
func (n NomadACL) Authorize(secret, ns string, capabilities []string) (string, error) {
	c, err := n.Auth.Resolve(secret)
	if err != nil {
		return "", err
	}
	for _, capability := range capabilities {
		if c.Allowed(ns, capability) {
			return c.AccessorID, nil
		}
	}
	return "", auth.ErrPermissionDenied
}

// Redacting is implemented by Authorizers that can tell which namespaces
// the holder of a token may not read: the engine's reasons name other
// tenants' jobs ("waiting behind ns/id"), which a caller must not learn.
type Redacting interface {
	// Redactor returns a function hiding, in a text, every namespace of
	// namespaces the token may not read and the jobs in them.
	Redactor(secret string, namespaces []string) func(string) string
}

// Redactor implements Redacting with governor/auth's Redactor.
func (n NomadACL) Redactor(secret string, namespaces []string) func(string) string {
	c, err := n.Auth.Resolve(secret)
	if err != nil {
		return func(string) string { return auth.Hidden }
	}
	return c.Redactor(namespaces).Text
}

// authorize checks the caller of a request of kind k for the namespace
// of t and records its accessor and redactor in t.
func (p *Proxy) authorize(k Kind, t *target) error {
	if p.auth == nil {
		return nil
	}
	acc, err := p.auth.Authorize(t.Token, t.Namespace, k.Capabilities())
	t.Accessor = acc
	if r, ok := p.auth.(Redacting); ok && err == nil {
		t.redact = r.Redactor(t.Token, p.store.Namespaces())
	}
	return err
}

func isAuthError(err error) bool {
	return errors.Is(err, auth.ErrPermissionDenied) || errors.Is(err, auth.ErrUnavailable)
}

// denyAuth answers an authorization refusal as Nomad does: 403 and its
// text, nothing about the job, the tenant or why.
func denyAuth(w http.ResponseWriter, err error) { auth.Deny(w, err) }
