package ha

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"
	"github.com/shoenig/test/must"
)

// TestMemberEndpoint: the leader's URL comes from Consul's lock key, and a
// standby forwards callers' tokens to it, so only a plain http(s) address
// is accepted.
func TestMemberEndpoint(t *testing.T) {
	cases := map[string]struct {
		url  string
		want string // "" refused
	}{
		"http":               {url: "http://127.0.0.1:4680", want: "http://127.0.0.1:4680"},
		"https with path":    {url: "https://gov.example:4646/base", want: "https://gov.example:4646/base"},
		"ipv6":               {url: "http://[::1]:4680", want: "http://[::1]:4680"},
		"empty":              {url: ""},
		"no scheme":          {url: "127.0.0.1:4680"},
		"file":               {url: "file:///etc/passwd"},
		"unix":               {url: "unix:///run/allot.sock"},
		"javascript":         {url: "javascript:alert(1)"},
		"no host":            {url: "http:///v1/jobs"},
		"opaque":             {url: "http:evil"},
		"credentials":        {url: "http://user:pw@127.0.0.1:4680"},
		"user only":          {url: "https://user@127.0.0.1:4680"},
		"query":              {url: "http://127.0.0.1:4680/?namespace=*"},
		"empty query":        {url: "http://127.0.0.1:4680/?"},
		"fragment":           {url: "http://127.0.0.1:4680/#x"},
		"control characters": {url: "http://127.0.0.1:4680/\r\nX-Evil: 1"},
		"bad escape":         {url: "http://127.0.0.1:4680/%zz"},
		"bad port":           {url: "http://127.0.0.1:port"},
		"too long":           {url: "http://127.0.0.1:4680/" + strings.Repeat("a", MaxURLLen)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := Member{ID: "gov-a", URL: tc.url}.Endpoint()
			if tc.want == "" {
				must.True(t, errors.Is(err, ErrBadURL), must.Sprintf("err = %v", err))
				must.Nil(t, u)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, u.String())
		})
	}
}

// FuzzMemberEndpoint: any lock key value is refused or yields a URL with
// the properties Endpoint promises; it never panics.
func FuzzMemberEndpoint(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:4680", "https://u:p@h/", "file:///x", "http://h/?q#f", "%", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Member{URL: s}.Endpoint()
		if err != nil {
			must.True(t, errors.Is(err, ErrBadURL))
			return
		}
		must.LessEq(t, MaxURLLen, len(s))
		must.True(t, u.Scheme == "http" || u.Scheme == "https")
		must.NotEq(t, "", u.Host)
		must.Nil(t, u.User)
		must.Eq(t, "", u.RawQuery)
		must.Eq(t, "", u.Fragment)
	})
}

// TestObserveRefusesHostileLeaderEntries: the lock key's value names the
// leader; an entry with a refused URL or id (written by hand, garbled) is
// no known leader, as an unreadable one is, while the term's epoch stays.
func TestObserveRefusesHostileLeaderEntries(t *testing.T) {
	cases := map[string]struct {
		value string
		want  Member
	}{
		"valid":            {value: `{"id":"gov-a","url":"http://127.0.0.1:4680"}`, want: Member{ID: "gov-a", URL: "http://127.0.0.1:4680"}},
		"credentials":      {value: `{"id":"gov-a","url":"http://u:p@127.0.0.1:4680"}`},
		"not http":         {value: `{"id":"gov-a","url":"gopher://127.0.0.1:70"}`},
		"no url":           {value: `{"id":"gov-a"}`},
		"terminal escapes": {value: `{"id":"gov-a\u001b[2J","url":"http://127.0.0.1:4680"}`},
		"id too long":      {value: `{"id":"` + strings.Repeat("a", 129) + `","url":"http://127.0.0.1:4680"}`},
		"not json":         {value: `gov-a http://127.0.0.1:4680`},
		"huge":             {value: `{"id":"gov-a","url":"http://h/` + strings.Repeat("a", 1<<20) + `"}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newTestElector(t, newFakeClock())
			e.observe(&api.KVPair{Key: "allot/governor/leader", Session: "s", Value: []byte(tc.value), ModifyIndex: 9})
			st := e.Status()
			must.Eq(t, tc.want, st.Leader)
			must.Eq(t, uint64(9), st.Epoch)
		})
	}
}
