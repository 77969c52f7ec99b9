package reconcile

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/engine"
)

// TestReserveCarriesThePin: an admission through the proxy's path
// (Reserve) carries the engine's placement pin in Verdict.Nodes, and the
// store's reservation is marked pinned; a job that is not admitted
// carries none; with placement "nomad" nothing is pinned.
func TestReserveCarriesThePin(t *testing.T) {
	for name, tc := range map[string]struct {
		placement string
		pinned    bool
	}{
		"pack":  {placement: engine.PlacementPack, pinned: true},
		"nomad": {placement: engine.PlacementNomad},
	} {
		t.Run(name, func(t *testing.T) {
			e := newPhantomEnv(t)
			e.r.Config.Placement = tc.placement
			v, _ := e.r.Reserve(cluster.ConvertJob(heldJob("team-a", "first")))
			must.True(t, v.Admitted, must.Sprint(v.Reason))
			if !tc.pinned {
				must.MapEmpty(t, v.Nodes)
				return
			}
			must.MapLen(t, 1, v.Nodes)
			must.SliceLen(t, 1, v.Nodes["g"], must.Sprintf("one 4-GPU allocation on one node: %v", v.Nodes))
			reserved, ok := e.r.Store.Job("team-a", "first")
			must.True(t, ok)
			must.True(t, reserved.Pinned)

			// team-a may hold 8 of the 8 GPUs: the second fits the other
			// node, the third fits nowhere and is not admitted.
			second, _ := e.r.Reserve(cluster.ConvertJob(heldJob("team-a", "second")))
			must.True(t, second.Admitted, must.Sprint(second.Reason))
			must.NotEq(t, v.Nodes["g"], second.Nodes["g"])
			third, _ := e.r.Reserve(cluster.ConvertJob(heldJob("team-a", "third")))
			must.False(t, third.Admitted)
			must.MapEmpty(t, third.Nodes)
		})
	}
}
