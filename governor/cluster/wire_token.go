package cluster

import (
	"bytes"

	"github.com/hashicorp/nomad/api"
)

// The parts of a job the wire types keep only as far as
// jobmeta.Tokens.Needs reads them: whether a task has a vault
// block or templates, and each service's provider. The rest of those
// blocks is scanned over.

// presence records whether a JSON value is there: not null, not empty.
type presence bool

// UnmarshalJSON records presence without building the value.
func (p *presence) UnmarshalJSON(b []byte) error {
	v := bytes.TrimSpace(b)
	*p = presence(len(v) > 0 && !bytes.Equal(v, []byte("null")) && !bytes.Equal(v, []byte("[]")) && !bytes.Equal(v, []byte("{}")))
	return nil
}

// wireService is what the governor reads of a service.
type wireService struct {
	Provider string
}

// keepTokenParts sets placeholders on the task for what was present.
func (t *wireTask) keepTokenParts() {
	if t.Vault {
		t.Task.Vault = &api.Vault{}
	}
	if t.Templates {
		t.Task.Templates = []*api.Template{{}}
	}
	t.Task.Services = services(t.Services)
}

// services turns the providers read into api services (nil when none).
func services(in []wireService) []*api.Service {
	var out []*api.Service
	for _, s := range in {
		out = append(out, &api.Service{Provider: s.Provider})
	}
	return out
}
