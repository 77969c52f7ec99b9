package agent

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
)

func TestSubmitterTokens(t *testing.T) {
	server := func(vaultOn, vaultAllow, consulAllow bool) func() (*api.AgentSelf, error) {
		return func() (*api.AgentSelf, error) {
			return &api.AgentSelf{Config: map[string]interface{}{
				"Server": map[string]interface{}{"Enabled": true},
				"Vault":  map[string]interface{}{"Enabled": vaultOn, "AllowUnauthenticated": vaultAllow},
				"Consul": map[string]interface{}{"AllowUnauthenticated": consulAllow},
			}}, nil
		}
	}
	denied := func() (*api.AgentSelf, error) {
		return nil, errors.New("Unexpected response code: 403 (Permission denied)")
	}
	cases := map[string]struct {
		mode string
		self func() (*api.AgentSelf, error)
		want jobmeta.Tokens
		log  string
	}{
		"auto, Nomad's defaults": {"auto", server(false, true, true), jobmeta.Tokens{VaultOptional: true, ConsulOptional: true},
			"submitter tokens read from the Nomad server's configuration: demanded=none"},
		"auto, both enforced": {"auto", server(true, false, false), jobmeta.Tokens{},
			`demanded="vault and consul"`},
		"auto, consul enforced": {"auto", server(false, true, false), jobmeta.Tokens{VaultOptional: true},
			"demanded=consul"},
		"auto, not readable: both demanded": {"auto", denied, jobmeta.Tokens{},
			"cannot read which submitter tokens Nomad demands"},
		"required ignores the agent": {"required", server(false, true, true), jobmeta.Tokens{},
			"submitter tokens as configured"},
		"none ignores the agent": {"none", denied, jobmeta.Tokens{VaultOptional: true, ConsulOptional: true},
			"submitter tokens as configured: submitter_tokens=none demanded=none"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
			must.Eq(t, tc.want, submitterTokens(tc.mode, tc.self, log))
			must.StrContains(t, buf.String(), tc.log)
		})
	}
}
