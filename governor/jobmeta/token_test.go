package jobmeta

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

func TestTokensNeeds(t *testing.T) {
	vault := func(j *api.Job) { j.TaskGroups[0].Tasks[0].Vault = &api.Vault{Policies: []string{"p"}} }
	template := func(j *api.Job) { j.TaskGroups[0].Tasks[0].Templates = []*api.Template{{}} }
	groupService := func(j *api.Job) { j.TaskGroups[0].Services = []*api.Service{{Name: "web"}} }
	taskConsul := func(j *api.Job) {
		j.TaskGroups[0].Tasks[0].Services = []*api.Service{{Name: "web", Provider: "consul"}}
	}
	nomadService := func(j *api.Job) {
		j.TaskGroups[0].Services = []*api.Service{{Name: "web", Provider: "nomad"}}
	}
	required, _ := TokensOf(TokensRequired)
	none, _ := TokensOf(TokensNone)
	vaultOnly := Tokens{ConsulOptional: true}
	consulOnly := Tokens{VaultOptional: true}
	cases := map[string]struct {
		tokens Tokens
		edit   func(j *api.Job)
		want   bool
	}{
		"required: plain":                  {required, func(*api.Job) {}, false},
		"required: vault block":            {required, vault, true},
		"required: template":               {required, template, true},
		"required: group service":          {required, groupService, true},
		"required: task consul service":    {required, taskConsul, true},
		"required: nomad service":          {required, nomadService, false},
		"none: vault block":                {none, vault, false},
		"none: template":                   {none, template, false},
		"none: group service":              {none, groupService, false},
		"vault only: vault block":          {vaultOnly, vault, true},
		"vault only: template":             {vaultOnly, template, false},
		"vault only: consul service":       {vaultOnly, taskConsul, false},
		"consul only: vault block":         {consulOnly, vault, false},
		"consul only: template":            {consulOnly, template, true},
		"consul only: default service":     {consulOnly, groupService, true},
		"consul only: nomad service":       {consulOnly, nomadService, false},
		"zero value demands both: vault":   {Tokens{}, vault, true},
		"zero value demands both: service": {Tokens{}, groupService, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := MakeJob("x", "ml").Build()
			tc.edit(j)
			must.Eq(t, tc.want, tc.tokens.Needs(j))
		})
	}
	must.False(t, required.Needs(nil))
}

func TestTokensOfModes(t *testing.T) {
	cases := map[string]struct {
		mode   string
		want   Tokens
		ok     bool
		String string
	}{
		"required": {TokensRequired, Tokens{}, true, "vault and consul"},
		"none":     {TokensNone, Tokens{VaultOptional: true, ConsulOptional: true}, true, "none"},
		"auto":     {TokensAuto, Tokens{}, false, "vault and consul"},
		"unknown":  {"sometimes", Tokens{}, false, "vault and consul"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := TokensOf(tc.mode)
			must.Eq(t, tc.ok, ok)
			must.Eq(t, tc.want, got)
			must.Eq(t, tc.String, got.String())
		})
	}
	must.Eq(t, "vault", Tokens{ConsulOptional: true}.String())
	must.Eq(t, "consul", Tokens{VaultOptional: true}.String())
}

// agentConfig builds /v1/agent/self's Config as Nomad 1.6.1 renders it
// (JSON decoded into a map): server enabled or not, and the vault and
// consul blocks' values (nil leaves a key out).
func agentConfig(server bool, vaultEnabled, vaultAllow, consulAllow any) map[string]interface{} {
	block := func(kv ...any) map[string]interface{} {
		m := map[string]interface{}{}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] != nil {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	return map[string]interface{}{
		"Server": block("Enabled", server),
		"Vault":  block("Enabled", vaultEnabled, "AllowUnauthenticated", vaultAllow),
		"Consul": block("AllowUnauthenticated", consulAllow),
	}
}

func TestTokensFromAgent(t *testing.T) {
	cases := map[string]struct {
		cfg     map[string]interface{}
		want    Tokens
		unknown bool
	}{
		"Nomad's defaults (vault off, consul allows)": {agentConfig(true, false, true, true), Tokens{VaultOptional: true, ConsulOptional: true}, false},
		"vault on, allows unauthenticated":            {agentConfig(true, true, true, true), Tokens{VaultOptional: true, ConsulOptional: true}, false},
		"vault on, demands tokens":                    {agentConfig(true, true, false, true), Tokens{ConsulOptional: true}, false},
		"vault off, demands tokens (never used)":      {agentConfig(true, false, false, true), Tokens{VaultOptional: true, ConsulOptional: true}, false},
		"consul demands tokens":                       {agentConfig(true, false, true, false), Tokens{VaultOptional: true}, false},
		"both demand tokens":                          {agentConfig(true, true, false, false), Tokens{}, false},
		"allow_unauthenticated unset counts as false": {agentConfig(true, true, nil, nil), Tokens{}, false},
		"not a bool counts as false":                  {agentConfig(true, true, "true", "yes"), Tokens{}, false},
		"client agent: unknown, both demanded":        {agentConfig(false, false, true, true), Tokens{}, true},
		"no config (no agent:read): both demanded":    {nil, Tokens{}, true},
		"no server block: both demanded":              {map[string]interface{}{"Vault": map[string]interface{}{}}, Tokens{}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := TokensFromAgent(tc.cfg)
			must.Eq(t, tc.want, got)
			if tc.unknown {
				must.ErrorIs(t, err, ErrTokensUnknown)
				return
			}
			must.NoError(t, err)
		})
	}
}

func TestAsSubmitterToken(t *testing.T) {
	cases := map[string]struct {
		err  error
		want bool
	}{
		"vault":  {errors.New("Unexpected response code: 500 (1 error occurred:\n\t* Vault used in the job but missing Vault token\n\n)"), true},
		"consul": {errors.New("Unexpected response code: 500 (job-submitter consul token denied: missing consul token)"), true},
		"other":  {errors.New("Unexpected response code: 500 (rpc error: eval broker disabled)"), false},
		"nil":    {nil, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := AsSubmitterToken(tc.err)
			must.Eq(t, tc.want, errors.Is(err, ErrSubmitterToken))
			if tc.err != nil {
				must.ErrorIs(t, err, tc.err)
			}
		})
	}
	wrapped := AsSubmitterToken(fmt.Errorf("writing: %w", errors.New("Vault used in the job but missing Vault token")))
	must.Eq(t, wrapped, AsSubmitterToken(wrapped))
}
