package jobmeta

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// Tokens says which submitter tokens a Nomad cluster demands when a job
// is registered. Nomad never stores those tokens, so the governor,
// writing with its own token, cannot hold, requeue or re-admit a job
// whose registration needs one. The zero value demands both: the safe
// assumption when the cluster's settings are unknown.
type Tokens struct {
	// VaultOptional mirrors the servers' vault.allow_unauthenticated =
	// true (Nomad's default) or Vault being disabled: a vault block
	// needs no Vault token (nomad/job_endpoint_hook_vault.go).
	VaultOptional bool
	// ConsulOptional mirrors consul.allow_unauthenticated = true
	// (Nomad's default): Consul services and templates need no Consul
	// token (nomad/job_endpoint.go, checkConsulToken).
	ConsulOptional bool
}

// Token modes of the governor's submitter_tokens setting.
const (
	// TokensAuto reads the Nomad agent's configuration at start
	// (TokensFromAgent).
	TokensAuto = "auto"
	// TokensRequired assumes both tokens are demanded.
	TokensRequired = "required"
	// TokensNone assumes neither is.
	TokensNone = "none"
)

// TokensOf returns the Tokens of a fixed mode (TokensRequired or
// TokensNone); ok is false for TokensAuto and unknown modes.
func TokensOf(mode string) (t Tokens, ok bool) {
	switch mode {
	case TokensRequired:
		return Tokens{}, true
	case TokensNone:
		return Tokens{VaultOptional: true, ConsulOptional: true}, true
	}
	return Tokens{}, false
}

// Needs reports whether Nomad refuses to register job without its
// submitter's Vault or Consul token on a cluster with these settings: a
// task with a vault block when Vault tokens are demanded, or Consul usage
// as Nomad 1.6.1 counts it (structs.Job.ConsulUsages: a service whose
// provider is consul, the default, on the group or a task, or a task
// template) when Consul tokens are. The proxy admits such a job or
// refuses it (409), never holds it; the engine never picks it as a
// victim.
func (t Tokens) Needs(job *api.Job) bool {
	if job == nil {
		return false
	}
	return (!t.VaultOptional && usesVault(job)) || (!t.ConsulOptional && usesConsul(job))
}

// String names what is demanded, for logs: "vault and consul", "vault",
// "consul" or "none".
func (t Tokens) String() string {
	var need []string
	if !t.VaultOptional {
		need = append(need, "vault")
	}
	if !t.ConsulOptional {
		need = append(need, "consul")
	}
	if len(need) == 0 {
		return "none"
	}
	return strings.Join(need, " and ")
}

func usesVault(job *api.Job) bool {
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			if t.Vault != nil {
				return true
			}
		}
	}
	return false
}

func usesConsul(job *api.Job) bool {
	for _, tg := range job.TaskGroups {
		if consulServices(tg.Services) {
			return true
		}
		for _, t := range tg.Tasks {
			if len(t.Templates) > 0 || consulServices(t.Services) {
				return true
			}
		}
	}
	return false
}

func consulServices(svcs []*api.Service) bool {
	for _, s := range svcs {
		if s != nil && (s.Provider == "" || s.Provider == "consul") {
			return true
		}
	}
	return false
}

// ErrTokensUnknown means the agent's configuration did not say what the
// cluster demands; TokensFromAgent then answers the safe zero Tokens.
var ErrTokensUnknown = errors.New("cannot tell which submitter tokens Nomad demands")

// TokensFromAgent reads what the cluster demands from a Nomad agent's
// configuration as /v1/agent/self returns it (api.AgentSelf.Config).
// Only a server's configuration counts: the servers check tokens at
// registration, and a client agent's vault and consul blocks need not
// match theirs. A missing or malformed value counts as Nomad counts an
// unset pointer: not allowed. On error the answer is the zero Tokens
// (both demanded) with an error wrapping ErrTokensUnknown.
func TokensFromAgent(cfg map[string]interface{}) (Tokens, error) {
	if cfg == nil {
		return Tokens{}, fmt.Errorf("%w: the agent returned no configuration (its token needs agent:read)", ErrTokensUnknown)
	}
	if !boolAt(cfg, "Server", "Enabled") {
		return Tokens{}, fmt.Errorf("%w: the agent is not a server (point the governor at a server, or set submitter_tokens)", ErrTokensUnknown)
	}
	return Tokens{
		VaultOptional:  !boolAt(cfg, "Vault", "Enabled") || boolAt(cfg, "Vault", "AllowUnauthenticated"),
		ConsulOptional: boolAt(cfg, "Consul", "AllowUnauthenticated"),
	}, nil
}

// boolAt is cfg[block][key] when that is a JSON true.
func boolAt(cfg map[string]interface{}, block, key string) bool {
	m, ok := cfg[block].(map[string]interface{})
	if !ok {
		return false
	}
	b, ok := m[key].(bool)
	return ok && b
}

// ErrSubmitterToken means Nomad refused a governor write because the job
// needs the submitter's Vault or Consul token, which Nomad does not store.
// Retrying cannot succeed.
var ErrSubmitterToken = errors.New("Nomad requires the submitter's Vault/Consul token to register this job")

// missingTokenTexts are the error texts of Nomad 1.6.1 for a register
// without the needed token (nomad/job_endpoint_hook_vault.go:45,
// nomad/job_endpoint.go:253 with nomad/consul.go:197). Nomad answers them
// as a plain-text HTTP 500 body, so matching the text is the only signal.
var missingTokenTexts = []string{
	"Vault used in the job but missing Vault token",
	"failed to lookup Vault token",
	"job-submitter consul token denied",
}

// AsSubmitterToken wraps err with ErrSubmitterToken when it is Nomad's
// refusal for a missing Vault/Consul token, and returns it unchanged
// otherwise.
func AsSubmitterToken(err error) error {
	if err == nil || errors.Is(err, ErrSubmitterToken) {
		return err
	}
	for _, t := range missingTokenTexts {
		if strings.Contains(err.Error(), t) {
			return errors.Join(ErrSubmitterToken, err)
		}
	}
	return err
}
