package cluster

import (
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
)

// The store marks NeedsToken (never a victim) by the cluster's settings
// (UseTokens); without them, every token counts as demanded.
func TestStoreNeedsTokenFollowsTheCluster(t *testing.T) {
	vaultJob := func() *api.Job {
		j := api.NewBatchJob("v", "v", "global", 50)
		j.Namespace = pointerTo("ml")
		j.TaskGroups = []*api.TaskGroup{{Name: pointerTo("g"), Tasks: []*api.Task{{Name: "t", Driver: "raw_exec", Vault: &api.Vault{}}}}}
		return j
	}
	cases := map[string]struct {
		use  *jobmeta.Tokens
		want bool
	}{
		"not told: demanded":        {nil, true},
		"vault demanded":            {&jobmeta.Tokens{ConsulOptional: true}, true},
		"vault allowed without one": {&jobmeta.Tokens{VaultOptional: true}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewStore(nil, nil)
			if tc.use != nil {
				s.UseTokens(*tc.use)
			}
			s.Reset(&Initial{Jobs: []*api.Job{vaultJob()}})
			j, ok := s.Job("ml", "v")
			must.True(t, ok)
			must.Eq(t, tc.want, j.NeedsToken)
			must.Eq(t, tc.want, s.NeedsSubmitterToken(vaultJob()))
		})
	}
}
