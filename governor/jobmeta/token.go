package jobmeta

import (
	"errors"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// NeedsSubmitterToken reports whether Nomad may refuse to register job
// without the submitter's Vault or Consul token: a task with a vault
// block (nomad/job_endpoint_hook_vault.go), or Consul usage as Nomad
// 1.6.1 counts it (structs.Job.ConsulUsages: a service whose provider is
// consul, the default, on the group or a task, or a task template).
// Nomad never stores those tokens, so the governor, writing with its own
// token, cannot hold, requeue or re-admit such a job on a cluster that
// sets vault/consul allow_unauthenticated = false. The proxy admits such a
// job or refuses it (409), never holds it; the engine never picks it as a
// victim.
func NeedsSubmitterToken(job *api.Job) bool {
	if job == nil {
		return false
	}
	for _, tg := range job.TaskGroups {
		if consulServices(tg.Services) {
			return true
		}
		for _, t := range tg.Tasks {
			if t.Vault != nil || len(t.Templates) > 0 || consulServices(t.Services) {
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
