package agent

import (
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/jobmeta"
)

// submitterTokens decides which submitter tokens the cluster demands
// (config.SubmitterTokens*): a fixed mode as configured, or with "auto"
// what the Nomad agent's configuration says, read once at start with the
// governor's token. When it cannot be read both count as demanded (jobs
// using Vault or Consul are then admitted or refused, never held). The
// decision is logged either way.
func submitterTokens(mode string, self func() (*api.AgentSelf, error), log hclog.Logger) jobmeta.Tokens {
	if t, ok := jobmeta.TokensOf(mode); ok {
		log.Info("submitter tokens as configured", "submitter_tokens", mode, "demanded", t.String())
		return t
	}
	var cfg map[string]interface{}
	s, err := self()
	if err == nil && s != nil {
		cfg = s.Config
	}
	if err == nil {
		var t jobmeta.Tokens
		if t, err = jobmeta.TokensFromAgent(cfg); err == nil {
			log.Info("submitter tokens read from the Nomad server's configuration", "demanded", t.String(),
				"vault_allow_unauthenticated", t.VaultOptional, "consul_allow_unauthenticated", t.ConsulOptional)
			return t
		}
	}
	t := jobmeta.Tokens{}
	log.Warn("cannot read which submitter tokens Nomad demands; assuming Vault and Consul tokens are: jobs using them are admitted or refused, never held (set submitter_tokens to decide)",
		"error", err, "demanded", t.String())
	return t
}

// tokensFor is submitterTokens for the configuration and Nomad client.
func tokensFor(cfg config.Config, client *api.Client, log hclog.Logger) jobmeta.Tokens {
	return submitterTokens(cfg.SubmitterTokens, client.Agent().Self, log)
}
