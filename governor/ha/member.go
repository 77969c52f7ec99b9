package ha

import (
	"errors"
	"fmt"
	"net/url"
)

// MaxURLLen bounds a member's advertised URL: longer values in Consul's
// lock key are refused.
const MaxURLLen = 1024

// ErrBadURL is returned for an advertised URL a governor refuses to
// forward to.
var ErrBadURL = errors.New("ha: advertised URL must be an http(s) URL with a host, no credentials, query or fragment, at most 1024 bytes")

// Endpoint is m's advertised URL, parsed, when it is one a standby may
// forward a caller's request (and token) to: http or https, a host, no
// user info, query or fragment, at most MaxURLLen bytes. The lock key's
// value is read from Consul, so anything else is refused with ErrBadURL.
func (m Member) Endpoint() (*url.URL, error) {
	if len(m.URL) > MaxURLLen {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadURL, len(m.URL))
	}
	u, err := url.Parse(m.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("%w: %q", ErrBadURL, m.URL)
	}
	return u, nil
}

// check refuses a member entry read from Consul whose id is not one
// Config.Validate accepts or whose URL Endpoint refuses: both are shown to
// operators (allotctl status) and the URL receives callers' tokens.
func (m Member) check() error {
	if !memberIDPattern.MatchString(m.ID) {
		return fmt.Errorf("ha: member id %q must be 1-128 letters, digits, '.', '_', ':' or '-'", m.ID)
	}
	_, err := m.Endpoint()
	return err
}
