package engine

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// moveScene: tenants a, b and c (nominal 16 each) on three 8-GPU nodes
// holding 5, 2 and 4 GPUs (13 free, no node with 8); a's 8-GPU job has
// waited an hour and is its pool's starving head. b2 (2 GPUs, alone on
// n2, checkpointed lostMin minutes ago) fits n3's 4 free GPUs.
func moveScene(lostMin int) *scene {
	sc := &scene{tenants: []*Tenant{
		mkTenant("a").Quota("gpu", 16).Build(),
		mkTenant("b").Quota("gpu", 16).Build(),
		mkTenant("c").Quota("gpu", 16).Build(),
	}, nodes: []*Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8)}}
	sc.run("b", "b1", "standard", "n1", 3, 5).run("c", "c1", "standard", "n1", 2, 5).
		run("b", "b2", "standard", "n2", 2, lostMin).
		run("c", "c2", "standard", "n3", 4, 5)
	big := gpuJob("a", "big", "standard", 8)
	big.QueuedAt = t0.Add(10 * time.Second).Add(-time.Hour)
	return sc.queue(big)
}

// runningHigh is moveScene with every running job of class high, above
// the head's standard, and checkpointed lostMin minutes ago.
func runningHigh(lostMin int) *scene {
	sc := moveScene(lostMin)
	for _, j := range sc.jobs {
		if j.State == Admitted {
			j.Class = "high"
		}
	}
	for _, a := range sc.allocs {
		a.LastCheckpoint = t0.Add(10 * time.Second).Add(-time.Duration(lostMin) * time.Minute)
	}
	return sc
}

// saveOnStop marks every group of j as saving a checkpoint when stopped
// (its device tasks under the ckpt driver).
func saveOnStop(j *Job) {
	for i := range j.Groups {
		j.Groups[i].SavesOnStop = true
	}
}

func (sc *scene) job(id string) *Job {
	for _, j := range sc.jobs {
		if j.ID == id {
			return j
		}
	}
	return nil
}

// TestMove: the starving head that fails only fit moves the cheapest
// jobs off the least used node when each fits elsewhere at once; no move
// when a moved job would not fit elsewhere, would lose more than
// FairLostWork, or is of a higher class and loses more than
// FairCheapLoss (unless it saves on stop),
// started or was requeued too recently, when the reservation starts soon, when the job is not (yet)
// the starving head, or with preemption disabled.
func TestMove(t *testing.T) {
	now := t0.Add(10 * time.Second)
	// Every job started 5 minutes ago, without a checkpoint since.
	startedRecently := func() *scene {
		sc := moveScene(5)
		for _, a := range sc.allocs {
			a.StartedAt, a.LastCheckpoint = now.Add(-5*time.Minute), time.Time{}
		}
		return sc
	}
	cases := map[string]struct {
		sc      func() *scene
		cfg     func(*Config)
		victims []string
	}{
		"the job alone on the least used node moves": {
			sc:      func() *scene { return moveScene(5) },
			victims: []string{"b2<-a/big"},
		},
		"the head's own job moves too, keeping its place (not a passed job)": {
			sc: func() *scene {
				sc := moveScene(5)
				sc.job("b2").Namespace = "a"
				sc.allocs[2].Namespace = "a"
				return sc
			},
			victims: []string{"b2<-a/big"},
		},
		"a moved job that would fit nowhere else: no move": {
			// 3, 3 and 2 free: 8 in all, but clearing a node moves 5 or 6
			// GPUs, which no other node can take.
			sc: func() *scene {
				sc := &scene{tenants: moveScene(5).tenants, nodes: []*Node{gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 8)}}
				sc.run("b", "b1", "standard", "n1", 5, 5).run("b", "b2", "standard", "n2", 5, 5).run("c", "c1", "standard", "n3", 6, 5)
				return sc.queue(moveScene(5).job("big"))
			},
		},
		"every candidate would lose more than FairLostWork: no move": {
			sc: func() *scene {
				sc := moveScene(45)
				for _, a := range sc.allocs {
					a.LastCheckpoint = now.Add(-45 * time.Minute)
				}
				return sc
			},
		},
		"a higher class that loses more than FairCheapLoss is not moved": {
			sc: func() *scene { return runningHigh(10) },
		},
		"a higher class that checkpointed within FairCheapLoss moves": {
			sc:      func() *scene { return runningHigh(5) },
			victims: []string{"b2<-a/big"},
		},
		"a higher class that saves on stop moves": {
			sc: func() *scene {
				sc := runningHigh(10)
				saveOnStop(sc.job("b2"))
				return sc
			},
			victims: []string{"b2<-a/big"},
		},
		"a job that saves on stop moves however long since its last checkpoint": {
			sc: func() *scene {
				sc := moveScene(45)
				for _, a := range sc.allocs {
					a.LastCheckpoint = now.Add(-45 * time.Minute)
				}
				saveOnStop(sc.job("b2"))
				return sc
			},
			victims: []string{"b2<-a/big"},
		},
		"a saving job still waits its MoveMinRun": {
			sc: func() *scene {
				sc := startedRecently()
				saveOnStop(sc.job("b2"))
				return sc
			},
		},
		"a job that started less than MoveMinRun ago stays": {
			sc: startedRecently,
		},
		"Config.MoveMinRun shortens the minimum run": {
			sc:      startedRecently,
			cfg:     func(c *Config) { c.MoveMinRun = 4 * time.Minute },
			victims: []string{"b2<-a/big"},
		},
		"a job requeued within MoveCooldown stays; the next cheapest node's jobs move": {
			sc: func() *scene {
				sc := moveScene(5)
				sc.job("b2").RequeuedAt = now.Add(-30 * time.Minute)
				return sc
			},
			// n3 (c2, 4 GPUs) next: c2 fits n2's 6 free GPUs.
			victims: []string{"c2<-a/big"},
		},
		"the reservation starts within MoveMinGain: the head waits for it": {
			sc: func() *scene {
				sc := moveScene(5)
				sc.job("b2").MaxRuntime = time.Hour + 5*time.Minute // ends in 5 min, freeing n2
				return sc
			},
		},
		"not yet starving: no move": {
			sc: func() *scene {
				sc := moveScene(5)
				sc.job("big").QueuedAt = now.Add(-5 * time.Minute)
				return sc
			},
		},
		"preemption disabled: no move": {
			sc:  func() *scene { return moveScene(5) },
			cfg: func(c *Config) { c.DisablePreemption = true },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			p := Decide(cfg, tc.sc().snap())
			must.Eq(t, tc.victims, victimsOf(p))
			if tc.victims == nil {
				must.StrNotContains(t, p.Verdicts["a/big"].Reason, "(move)")
				return
			}
			must.StrNotContains(t, onlyPreemption(t, p, CauseMove).Reason, passedReason)
			must.StrContains(t, p.Verdicts["a/big"].Reason, "(move)")
		})
	}
}

// TestMoveThenAdmit: the cycle after a move, the head is admitted onto
// the cleared node and the moved job first fit beside the other jobs.
func TestMoveThenAdmit(t *testing.T) {
	sc := moveScene(5)
	s := sc.snap()
	w := newWorld(testConfig(), s)
	p := w.step()
	must.Eq(t, []string{"b2<-a/big"}, victimsOf(p))
	s.Now = s.Now.Add(10 * time.Second)
	p = w.step()
	admitted := map[string][]string{}
	for _, d := range p.Decisions {
		if d.Action == Admit {
			admitted[d.JobID] = d.Nodes["g"]
		}
	}
	must.Eq(t, map[string][]string{"big": {"n2"}, "b2": {"n1"}}, admitted)
}

// TestPropertyMoveNoChurn: over many cycles of random 1-GPU arrivals
// and 8-GPU gangs on partly used clusters (nominal quotas as large as
// the cluster, so only fit holds a gang back), with checkpoints every 2
// minutes:
// moves happen, no job is moved twice within MoveCooldown, a move never
// takes more GPUs than its head asks for, and the head is admitted in
// the next cycle.
func TestPropertyMoveNoChurn(t *testing.T) {
	cfg := testConfig()
	cfg.StarvationTimeout = 30 * time.Second
	moves, twice := 0, 0
	// Seed 201877 failed a run over forty times the seeds before a move's
	// nodes were held for its head in the next cycles (moveholds.go).
	for _, seed := range propertySeeds(120, 201877) {
		r := rand.New(rand.NewSource(seed))
		s := moveCluster(r)
		w := newWorld(cfg, s)
		w.pins = true
		movedAt := map[string]time.Time{}
		var pending []string // heads of last cycle's moves
		for cycle := 0; cycle < 240; cycle++ {
			s.Now = s.Now.Add(30 * time.Second)
			w.finish()
			if r.Intn(6) == 0 {
				w.arrive(r, 300, 3000)
			}
			if r.Intn(20) == 0 {
				w.seq++
				g := mkJob(fmt.Sprintf("t%d", r.Intn(len(s.Tenants))), fmt.Sprintf("gang%d", w.seq)).Class("standard").
					Pool("gpu").Device("nvidia/gpu", 8).QueuedAt(s.Now).Build()
				s.Jobs = append(s.Jobs, g)
				w.ends[g.Key()] = s.Now.Add(time.Duration(600+r.Intn(3000)) * time.Second)
			}
			checkpointEvery(s, 2*time.Minute)
			held := map[string]int{} // GPUs per job before the cycle
			for _, a := range s.Allocs {
				held[a.Namespace+"/"+a.JobID] += a.Devices[h200]
			}
			p := w.step()
			for _, key := range pending {
				ns, id, _ := strings.Cut(key, "/")
				d, ok := p.Decision(ns, id)
				must.True(t, ok && d.Action == Admit, must.Sprintf("seed %d cycle %d: moved-for head %s not admitted next cycle: %s", seed, cycle, key, p.Verdicts[key].Reason))
			}
			pending = nil
			for _, pr := range p.Preemptions {
				if pr.Cause != CauseMove {
					continue
				}
				moves++
				head := w.job(pr.Namespace, pr.JobID)
				must.NotNil(t, head)
				n := 0
				for _, v := range pr.Victims {
					key := v.Namespace + "/" + v.JobID
					n += held[key]
					if at, ok := movedAt[key]; ok && s.Now.Sub(at) < MoveCooldown {
						twice++
					}
					movedAt[key] = s.Now
				}
				must.LessEq(t, head.Groups[0].Devices[0].Count*head.Groups[0].Count, n, must.Sprintf("seed %d: a move takes no more GPUs than its head asks for", seed))
				pending = append(pending, pr.Namespace+"/"+pr.JobID)
			}
		}
	}
	t.Logf("%d moves", moves)
	must.Positive(t, moves, must.Sprint("moves must actually happen"))
	must.Zero(t, twice)
}

// moveCluster: 3-5 nodes of 8 GPUs, 2-3 tenants whose nominal quota is
// the whole cluster, nothing running yet.
func moveCluster(r *rand.Rand) *Snapshot {
	nodes, nTenants := 3+r.Intn(3), 2+r.Intn(2)
	var ts []*Tenant
	for i := 0; i < nTenants; i++ {
		ts = append(ts, mkTenant(fmt.Sprintf("t%d", i)).Quota("gpu", int64(nodes*8)).Build())
	}
	var ns []*Node
	for i := 0; i < nodes; i++ {
		ns = append(ns, gpuNode(fmt.Sprintf("n%d", i), 8))
	}
	return snap(ts, ns, nil)
}
