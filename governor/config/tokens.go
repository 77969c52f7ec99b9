package config

import "fmt"

// Values of Config.SubmitterTokens (submitter_tokens in the file). Nomad
// never stores a job's Vault or Consul token, so where the servers demand
// them (vault.allow_unauthenticated = false with Vault enabled,
// consul.allow_unauthenticated = false) the governor cannot hold or
// requeue a job that uses Vault or Consul: it admits or refuses it.
const (
	// SubmitterTokensAuto reads the Nomad agent's configuration at start
	// (/v1/agent/self with the governor's token; the agent must be a
	// server and the token needs agent:read). When that fails the
	// governor assumes both tokens are demanded (the safe way: such jobs
	// are refused rather than held) and says so in its log.
	SubmitterTokensAuto = "auto"
	// SubmitterTokensRequired assumes both tokens are demanded.
	SubmitterTokensRequired = "required"
	// SubmitterTokensNone assumes neither is: jobs with vault blocks,
	// Consul services or templates are held like any other.
	SubmitterTokensNone = "none"
)

// validateTokens checks submitter_tokens.
func (c *Config) validateTokens() []error {
	switch c.SubmitterTokens {
	case SubmitterTokensAuto, SubmitterTokensRequired, SubmitterTokensNone:
		return nil
	}
	return []error{fmt.Errorf("submitter_tokens %q: must be %q, %q or %q", c.SubmitterTokens,
		SubmitterTokensAuto, SubmitterTokensRequired, SubmitterTokensNone)}
}
