package engine

import (
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// pinCluster is three 8-GPU nodes of pool gpu, n2 half used by a job of
// tenant other.
func pinCluster() ([]*Node, []*Alloc) {
	nodes := []*Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8)}
	allocs := []*Alloc{alloc("other", "busy", "g", "n2", 100, 128, map[string]int{h200: 4})}
	return nodes, allocs
}

func TestPinOfAdmission(t *testing.T) {
	busy := mkJob("other", "busy").State(Admitted).Pool("gpu").Device("gpu", 4).Build()
	cases := map[string]struct {
		job       *Job
		placement string
		want      map[string][]string
	}{
		"one allocation: the first node it fits": {
			job:  mkJob("ml", "j").Pool("gpu").Device("gpu", 8).Build(),
			want: map[string][]string{"g": {"n1"}},
		},
		"a gang packs onto as few nodes as the fit uses, sorted and distinct": {
			job:  mkJob("ml", "j").Pool("gpu").Count(3).Device("gpu", 4).Build(),
			want: map[string][]string{"g": {"n1", "n2"}},
		},
		"per task group": {
			job:  mkJob("ml", "j").Pool("gpu").Device("gpu", 8).Group("second", 1).Device("gpu", 2).Build(),
			want: map[string][]string{"g": {"n1"}, "second": {"n2"}},
		},
		"placement pack named explicitly": {
			job:       mkJob("ml", "j").Pool("gpu").Device("gpu", 8).Build(),
			placement: PlacementPack,
			want:      map[string][]string{"g": {"n1"}},
		},
		"placement left to Nomad": {
			job:       mkJob("ml", "j").Pool("gpu").Device("gpu", 8).Build(),
			placement: PlacementNomad,
		},
		"placement rules the engine does not model": {
			job: func() *Job { j := mkJob("ml", "j").Pool("gpu").Device("gpu", 8).Build(); j.NoPin = true; return j }(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Placement = tc.placement
			nodes, allocs := pinCluster()
			tenants := []*Tenant{mkTenant("ml").Build(), mkTenant("other").Build()}
			p := Decide(cfg, snap(tenants, nodes, allocs, busy, tc.job))
			d, ok := p.Decision("ml", "j")
			must.True(t, ok)
			must.Eq(t, Admit, d.Action)
			must.Eq(t, tc.want, d.Nodes)

			// The proxy's path pins the same way.
			v := Prepare(cfg, snap(tenants, nodes, allocs, busy)).Decide(tc.job, false)
			must.Eq(t, Admitted, v.State)
			must.Eq(t, tc.want, v.Nodes)
		})
	}
}

func TestPinSystemJobNever(t *testing.T) {
	cfg := testConfig()
	cfg.GovernSystemJobs = true
	nodes, _ := pinCluster()
	jb := mkJob("ml", "sys").Pool("gpu").Device("gpu", 1)
	jb.j.System = true
	p := Decide(cfg, snap([]*Tenant{mkTenant("ml").Build()}, nodes, nil, jb.Build()))
	d, ok := p.Decision("ml", "sys")
	must.True(t, ok)
	must.Eq(t, Admit, d.Action)
	must.Nil(t, d.Nodes)
}

// TestPinUpdates: Base.Decide pins an update only when none of the
// job's live allocations counts as placed.
func TestPinUpdates(t *testing.T) {
	nodes, allocs := pinCluster()
	running := mkJob("ml", "j").State(Admitted).Pool("gpu").Device("gpu", 2).Build()
	allocs = append(allocs, alloc("ml", "j", "g", "n3", 100, 128, map[string]int{h200: 2}))
	tenants := []*Tenant{mkTenant("ml").Build(), mkTenant("other").Build()}
	cases := map[string]struct {
		update   *Job
		replaces int
		want     map[string][]string
	}{
		"scale-up keeps the running allocation: no pin": {
			update: mkJob("ml", "j").Pool("gpu").Count(2).Device("gpu", 2).Build(),
		},
		"a new group beside the running one: no pin": {
			update: mkJob("ml", "j").Pool("gpu").Device("gpu", 2).Group("extra", 1).Device("gpu", 1).Build(),
		},
		"every live allocation replaced (new shape): pinned like a fresh job": {
			update:   mkJob("ml", "j").Pool("gpu").Device("gpu", 8).Build(),
			replaces: 1,
			want:     map[string][]string{"g": {"n1"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := Prepare(testConfig(), snap(tenants, nodes, allocs, running))
			v := b.Decide(tc.update, false)
			must.Eq(t, Admitted, v.State, must.Sprint(v.Reason))
			must.Eq(t, tc.replaces, v.Replaces)
			must.Eq(t, tc.want, v.Nodes)
		})
	}
}

// TestPinQueuedVictimStillPinned: a held job of the snapshot whose
// allocation Nomad is still stopping counts nothing as placed, so its
// next admission is fresh and pinned.
func TestPinQueuedVictimStillPinned(t *testing.T) {
	nodes, _ := pinCluster()
	allocs := []*Alloc{alloc("ml", "j", "g", "n3", 100, 128, map[string]int{h200: 2})}
	job := mkJob("ml", "j").Pool("gpu").Device("gpu", 2).Build()
	p := Decide(testConfig(), snap([]*Tenant{mkTenant("ml").Build()}, nodes, allocs, job))
	d, ok := p.Decision("ml", "j")
	must.True(t, ok)
	must.Eq(t, Admit, d.Action)
	// n3's 6 GPUs left beside the stopping allocation fit it more tightly
	// than n1's 8 (best fit).
	must.Eq(t, map[string][]string{"g": {"n3"}}, d.Nodes)
}

func TestUnpinBlockedPinnedJob(t *testing.T) {
	cases := map[string]struct {
		state           State
		pinned, blocked bool
		gangTimeout     bool
		want            []Action // decisions for ml/j
	}{
		"pinned and blocked: unpin":         {state: Admitted, pinned: true, blocked: true, want: []Action{Unpin}},
		"pinned, not blocked: nothing":      {state: Admitted, pinned: true},
		"blocked, not pinned: nothing":      {state: Admitted, blocked: true},
		"direct job: never the governor's":  {state: Direct, pinned: true, blocked: true},
		"requeued by its gang timeout only": {state: Admitted, pinned: true, blocked: true, gangTimeout: true, want: []Action{Requeue}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			nodes := []*Node{gpuNode("n1", 8)}
			job := mkJob("ml", "j").State(tc.state).Pool("gpu").Count(2).Device("gpu", 4).Build()
			job.Pinned, job.Blocked, job.AdmittedAt = tc.pinned, tc.blocked, t0.Add(-10*time.Minute)
			allocs := []*Alloc{alloc("ml", "j", "g", "n1", 100, 128, map[string]int{h200: 4})}
			allocs[0].Started = true
			if tc.gangTimeout {
				cfg.GangTimeout = 5 * time.Minute
			}
			later := mkJob("ml", "later").Pool("gpu").Device("gpu", 4).Build()
			p := Decide(cfg, snap([]*Tenant{mkTenant("ml").Build()}, nodes, allocs, job, later))
			var got []Action
			for _, d := range p.Decisions {
				if d.JobID == "j" {
					got = append(got, d.Action)
				}
			}
			must.Eq(t, tc.want, got)
			if tc.gangTimeout {
				return
			}
			// The reservation stays: the missing allocation's 4 GPUs are
			// not given to a later job.
			_, admitted := p.Decision("ml", "later")
			must.False(t, admitted, must.Sprint("the unpinned job keeps its reservation"))
			must.StrContains(t, p.Verdicts["ml/j"].Reason, "1 of 2 allocations")
		})
	}
}

// TestPropertyPinsFitTogether: over random clusters, every admission of a
// plan is pinned (randomSnapshot's jobs are fresh), each group to ready
// nodes of the job's pool, and the admissions of one plan fit the free
// capacity of their pinned nodes together: placing them one by one,
// each on the pinned node with the fewest GPUs free that fits it (the
// engine's best fit), never runs out.
func TestPropertyPinsFitTogether(t *testing.T) {
	for _, seed := range propertySeeds(300, 100951, 102096) { // the extra two: see placeOnPin
		r := rand.New(rand.NewSource(seed))
		s := randomSnapshot(r, 1+r.Intn(5), 1+r.Intn(12), r.Intn(40))
		p := Decide(testConfig(), s)
		free := freeOf(s)
		jobs := map[string]*Job{}
		for _, j := range s.Jobs {
			jobs[j.Key()] = j
		}
		for _, d := range p.Decisions {
			if d.Action != Admit {
				continue
			}
			j := jobs[d.Namespace+"/"+d.JobID]
			must.Eq(t, len(j.Groups), len(d.Nodes), must.Sprintf("seed %d: %s: a pin for every group", seed, j.Key()))
			for _, g := range j.Groups {
				ids := d.Nodes[g.Name]
				must.True(t, sort.StringsAreSorted(ids), must.Sprintf("seed %d: sorted", seed))
				must.LessEq(t, g.Count, len(ids), must.Sprintf("seed %d: at most one node per allocation", seed))
				for k := 0; k < g.Count; k++ {
					must.True(t, placeOnPin(s, free, j, &g, ids), must.Sprintf("seed %d: %s group %s: allocation %d does not fit its pinned nodes %v",
						seed, j.Key(), g.Name, k, ids))
				}
			}
		}
		cfg := testConfig()
		cfg.Placement = PlacementNomad
		for _, d := range Decide(cfg, s).Decisions {
			must.Nil(t, d.Nodes, must.Sprintf("seed %d: placement nomad pins nothing", seed))
		}
	}
}

// nodeFree is a node's free capacity, computed without the engine.
type nodeFree struct{ cpu, mem, gpu int64 }

func freeOf(s *Snapshot) map[string]*nodeFree {
	free := map[string]*nodeFree{}
	for _, n := range s.Nodes {
		free[n.ID] = &nodeFree{n.CPU, n.MemoryMB, int64(n.Devices[0].Healthy)}
	}
	for _, a := range s.Allocs {
		f := free[a.NodeID]
		f.cpu, f.mem, f.gpu = f.cpu-a.CPU, f.mem-a.MemoryMB, f.gpu-int64(a.Devices[h200])
	}
	return free
}

// placeOnPin takes one allocation of g from the pinned node, ready and
// of j's pool, with the fewest GPUs free that still fit it, then the
// fewest GPUs in all (the first of equals), or, for a group that asks
// for no device, the first pinned node with room, as the engine's best
// fit does (bestFit; seeds 100951 and 102096 of a longer run found this
// model without the two rules putting allocations where the engine had
// not); false when none has room.
func placeOnPin(s *Snapshot, free map[string]*nodeFree, j *Job, g *Group, ids []string) bool {
	var gpus int64
	for _, d := range g.Devices {
		gpus += int64(d.Count)
	}
	var best *nodeFree
	var size int
	for _, id := range ids {
		n, f := findNode(s, id), free[id]
		if !n.Ready || n.Pool != j.NodePool || f.cpu < g.CPU || f.mem < g.MemoryMB || f.gpu < gpus {
			continue
		}
		if best == nil || f.gpu < best.gpu || f.gpu == best.gpu && n.Devices[0].Healthy < size {
			best, size = f, n.Devices[0].Healthy
		}
		if gpus == 0 {
			break
		}
	}
	if best == nil {
		return false
	}
	best.cpu, best.mem, best.gpu = best.cpu-g.CPU, best.mem-g.MemoryMB, best.gpu-gpus
	return true
}
