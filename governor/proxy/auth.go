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

// authorize checks the caller of a request of kind k for the namespace
// of t and records its accessor in t.
func (p *Proxy) authorize(k Kind, t *target) error {
	if p.auth == nil {
		return nil
	}
	acc, err := p.auth.Authorize(t.Token, t.Namespace, k.Capabilities())
	t.Accessor = acc
	return err
}

func isAuthError(err error) bool {
	return errors.Is(err, auth.ErrPermissionDenied) || errors.Is(err, auth.ErrUnavailable)
}

// denyAuth answers an authorization refusal as Nomad does: 403 and its
// text, nothing about the job, the tenant or why.
func denyAuth(w http.ResponseWriter, err error) { auth.Deny(w, err) }
