package jobmeta

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

func TestNeedsSubmitterToken(t *testing.T) {
	cases := map[string]struct {
		edit func(j *api.Job)
		want bool
	}{
		"plain":         {func(j *api.Job) {}, false},
		"vault block":   {func(j *api.Job) { j.TaskGroups[0].Tasks[0].Vault = &api.Vault{Policies: []string{"p"}} }, true},
		"template":      {func(j *api.Job) { j.TaskGroups[0].Tasks[0].Templates = []*api.Template{{}} }, true},
		"group service": {func(j *api.Job) { j.TaskGroups[0].Services = []*api.Service{{Name: "web"}} }, true},
		"task consul service": {func(j *api.Job) {
			j.TaskGroups[0].Tasks[0].Services = []*api.Service{{Name: "web", Provider: "consul"}}
		}, true},
		"nomad service": {func(j *api.Job) {
			j.TaskGroups[0].Services = []*api.Service{{Name: "web", Provider: "nomad"}}
		}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := MakeJob("x", "ml").Build()
			tc.edit(j)
			must.Eq(t, tc.want, NeedsSubmitterToken(j))
		})
	}
	must.False(t, NeedsSubmitterToken(nil))
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
