package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/nomad/acl"
	"github.com/hashicorp/nomad/api"
)

// errACLDisabled is Nomad's answer when its ACL system is off.
var errACLDisabled = errors.New("ACL support disabled")

// errNotFound is a 404 from Nomad (a policy or role that is gone).
var errNotFound = errors.New("not found")

// maxAnswer bounds what is read of one Nomad answer (tokens and policies
// are small).
const maxAnswer = 1 << 20

// nomadACL reads tokens, roles and policies from Nomad's HTTP API with the
// caller's own token: Nomad lets any token read itself (/v1/acl/token/self),
// the roles linked to it and the policies it holds directly or through
// those roles (nomad/acl_endpoint.go GetPolicy, GetRoleByID), and anyone
// read the "anonymous" policy. The governor's own token is never sent.
type nomadACL struct {
	base   *url.URL
	client *http.Client
}

// get GETs path with secret (none when empty) and decodes the JSON answer.
func (n *nomadACL) get(ctx context.Context, path, secret string, out any) error {
	u := *n.base
	u.Path, u.RawQuery = path, ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if secret != "" {
		req.Header.Set("X-Nomad-Token", secret)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		// Not %w: the transport error names Nomad's address.
		return fmt.Errorf("%w: %s", ErrUnavailable, redactURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%w: reading %s: %v", ErrUnavailable, path, err)
	}
	return decodeAnswer(resp.StatusCode, body, out)
}

// decodeAnswer maps one Nomad answer onto the package's errors.
func decodeAnswer(status int, body []byte, out any) error {
	text := strings.TrimSpace(string(body))
	switch {
	case status == http.StatusOK:
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("%w: decoding Nomad's answer: %v", ErrUnavailable, err)
		}
		return nil
	case strings.Contains(text, errACLDisabled.Error()):
		return errACLDisabled
	case status == http.StatusNotFound && strings.Contains(text, "ACL token not found"):
		return ErrTokenNotFound
	case status == http.StatusNotFound:
		return errNotFound
	case status == http.StatusForbidden && strings.Contains(text, "ACL token not found"):
		return ErrTokenNotFound
	case status == http.StatusForbidden:
		return ErrPermissionDenied
	default:
		return fmt.Errorf("%w: Nomad answered %d: %.200s", ErrUnavailable, status, text)
	}
}

// redactURL keeps the reason of a transport error without the URL.
func redactURL(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

// resolve builds the caller of secret the way Nomad's ResolveToken does:
// a management token is acl.ManagementACL; any other token gets the ACL
// compiled from its policies and its roles' policies (missing ones are
// skipped, as Nomad skips them); no secret is the anonymous token with the
// "anonymous" policy. until is when the answer stops being valid on its
// own (the token's expiry), zero when it does not.
func (n *nomadACL) resolve(ctx context.Context, secret string, now time.Time) (c *Caller, until time.Time, err error) {
	if secret == "" {
		c, err = n.anonymous(ctx)
		return c, time.Time{}, err
	}
	var tok api.ACLToken
	if err := n.get(ctx, "/v1/acl/token/self", secret, &tok); err != nil {
		return nil, time.Time{}, err // errACLDisabled included: the caller turns it into "allowed"
	}
	if tok.ExpirationTime != nil && !tok.ExpirationTime.IsZero() {
		if !tok.ExpirationTime.After(now) {
			return nil, time.Time{}, ErrTokenExpired
		}
		until = *tok.ExpirationTime
	}
	c = &Caller{AccessorID: tok.AccessorID, Name: tok.Name, Type: tok.Type}
	if tok.Type == TypeManagement {
		c.acl = acl.ManagementACL
		return c, until, nil
	}
	c.Type = TypeClient
	names, err := n.policyNames(ctx, secret, &tok)
	if err != nil {
		return nil, time.Time{}, err
	}
	c.acl, err = n.compile(ctx, secret, names)
	return c, until, err
}

func (n *nomadACL) anonymous(ctx context.Context) (*Caller, error) {
	a, err := n.compile(ctx, "", []string{"anonymous"})
	if err != nil {
		return nil, err
	}
	return &Caller{Type: TypeAnonymous, acl: a}, nil
}

// policyNames lists the token's policies, then its roles' policies.
func (n *nomadACL) policyNames(ctx context.Context, secret string, tok *api.ACLToken) ([]string, error) {
	names := append([]string(nil), tok.Policies...)
	for _, link := range tok.Roles {
		if link == nil || link.ID == "" {
			continue
		}
		var role api.ACLRole
		err := n.get(ctx, "/v1/acl/role/"+url.PathEscape(link.ID), secret, &role)
		if errors.Is(err, errNotFound) {
			continue // deleted meanwhile: grants nothing, as in Nomad
		}
		if err != nil {
			return nil, fmt.Errorf("reading role %s: %w", link.ID, err)
		}
		for _, p := range role.Policies {
			if p != nil {
				names = append(names, p.Name)
			}
		}
	}
	return names, nil
}

// compile reads each named policy and compiles them with Nomad's acl
// package. A policy Nomad no longer has grants nothing.
func (n *nomadACL) compile(ctx context.Context, secret string, names []string) (*acl.ACL, error) {
	var policies []*acl.Policy
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		var p api.ACLPolicy
		err := n.get(ctx, "/v1/acl/policy/"+url.PathEscape(name), secret, &p)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading policy %s: %w", name, err)
		}
		parsed, err := acl.Parse(p.Rules)
		if err != nil {
			return nil, fmt.Errorf("%w: policy %s does not parse: %v", ErrUnavailable, name, err)
		}
		policies = append(policies, parsed)
	}
	a, err := acl.NewACL(false, policies)
	if err != nil {
		return nil, fmt.Errorf("%w: compiling policies: %v", ErrUnavailable, err)
	}
	return a, nil
}
