package engine

import (
	"fmt"
	"math/rand"
	"sort"
	"time"
)

// world is a tiny cluster model for multi-cycle tests: it applies plans
// the way the actuator and Nomad would (admitted jobs get allocations
// first-fit, requeued jobs lose theirs at once) and advances a fake clock.
type world struct {
	s     *Snapshot
	cfg   Config
	seq   int
	ends  map[string]time.Time // job key → when it completes
	pairs map[string]bool      // "preemptor>victim" of every preemption
	// pins: admitted jobs go only to the nodes of their decision's pin,
	// as Nomad places a pinned job (else first fit over all nodes).
	pins bool
}

func newWorld(cfg Config, s *Snapshot) *world {
	return &world{s: s, cfg: cfg, ends: map[string]time.Time{}, pairs: map[string]bool{}}
}

// busyWorld is the scene most multi-cycle property tests share: seed's
// random cluster with every GPU in use (fullCluster) under cfg, and the
// random source its arrivals draw from.
func busyWorld(cfg Config, seed int64) (*world, *rand.Rand) {
	r := rand.New(rand.NewSource(seed))
	s, _, _ := fullCluster(r)
	return newWorld(cfg, s), r
}

// tick advances the clock by one 5-second cycle, finishes the jobs due
// and submits arrivals (arrive) running minRun plus up to spread seconds.
func (w *world) tick(r *rand.Rand, minRun, spread int) {
	w.s.Now = w.s.Now.Add(5 * time.Second)
	w.finish()
	w.arrive(r, minRun, spread)
}

// checkpointEvery gives every allocation a checkpoint at each whole
// period since it started, as a job checkpointing on that period would.
func checkpointEvery(s *Snapshot, period time.Duration) {
	for _, a := range s.Allocs {
		if k := s.Now.Sub(a.StartedAt) / period; k > 0 {
			a.LastCheckpoint = a.StartedAt.Add(k * period)
		}
	}
}

// step runs one cycle, applies its plan and returns it.
func (w *world) step() *Plan {
	p := Decide(w.cfg, w.s)
	w.s.Claims, w.s.Taken, w.s.MoveHolds = p.Claims, p.Taken, p.MoveHolds // carried as the governor carries them
	for _, pr := range p.Preemptions {
		for _, v := range pr.Victims {
			w.pairs[pr.Namespace+"/"+pr.JobID+">"+v.Namespace+"/"+v.JobID] = true
		}
	}
	for _, d := range p.Decisions {
		w.apply(d)
	}
	return p
}

func (w *world) job(ns, id string) *Job {
	for _, j := range w.s.Jobs {
		if j.Namespace == ns && j.ID == id {
			return j
		}
	}
	return nil
}

func (w *world) apply(d Decision) {
	j := w.job(d.Namespace, d.JobID)
	switch d.Action {
	case Admit:
		j.State, j.AdmittedAt = Admitted, w.s.Now
		if w.pins {
			w.placeOn(j, d.Nodes)
		} else {
			w.place(j)
		}
	case Requeue, Hold:
		j.State = Queued
		if d.Action == Requeue {
			j.Requeues++
			j.RequeuedAt = w.s.Now
			if d.Preemptor != "" {
				j.PreemptedBy += " " + d.Preemptor
			}
		}
		w.dropAllocs(j)
	}
}

// arrive submits up to two random jobs of random tenants (class low,
// standard or high; 1-3 allocations of one GPU in pool gpu), each to run
// minRun plus up to spread seconds.
func (w *world) arrive(r *rand.Rand, minRun, spread int) {
	for n := r.Intn(3); n > 0; n-- {
		tn := fmt.Sprintf("t%d", r.Intn(len(w.s.Tenants)))
		w.seq++
		j := mkJob(tn, fmt.Sprintf("new%d", w.seq)).Class([]string{"low", "standard", "high"}[r.Intn(3)]).
			Pool("gpu").Count(1+r.Intn(3)).Device("nvidia/gpu", 1).QueuedAt(w.s.Now).Build()
		w.s.Jobs = append(w.s.Jobs, j)
		w.ends[j.Key()] = w.s.Now.Add(time.Duration(minRun+r.Intn(spread)) * time.Second)
	}
}

// place puts every allocation of j on the first node with room.
func (w *world) place(j *Job) { w.placeOn(j, nil) }

// placeOn is place with each group restricted to the nodes pin names
// for it, if any.
func (w *world) placeOn(j *Job, pin map[string][]string) {
	free := map[string]int{}
	for _, n := range w.s.Nodes {
		free[n.ID] = n.Devices[0].Healthy
	}
	for _, a := range w.s.Allocs {
		free[a.NodeID] -= a.Devices[h200]
	}
	for _, g := range j.Groups {
		need := g.Devices[0].Count
		for i := 0; i < g.Count; i++ {
			for _, n := range w.s.Nodes {
				if len(pin[g.Name]) > 0 && !containsString(pin[g.Name], n.ID) {
					continue
				}
				if free[n.ID] >= need {
					free[n.ID] -= need
					w.seq++
					a := alloc(j.Namespace, j.ID, g.Name, n.ID, g.CPU, g.MemoryMB, map[string]int{h200: need})
					a.ID, a.Started, a.StartedAt = fmt.Sprintf("a%d", w.seq), true, w.s.Now
					w.s.Allocs = append(w.s.Allocs, a)
					break
				}
			}
		}
	}
}

func (w *world) dropAllocs(j *Job) {
	kept := w.s.Allocs[:0]
	for _, a := range w.s.Allocs {
		if a.Namespace != j.Namespace || a.JobID != j.ID {
			kept = append(kept, a)
		}
	}
	w.s.Allocs = kept
}

// finish ends admitted jobs whose run time is over: their allocations
// go and the job stays listed dead, as Nomad lists a finished job until
// its garbage collection, reclaimWindow after its end here. The engine
// reads who preempted whom from the jobs' meta (lostTo): were a
// finished victim dropped at once, that memory would go with it.
func (w *world) finish() {
	kept := w.s.Jobs[:0]
	for _, j := range w.s.Jobs {
		end, ok := w.ends[j.Key()]
		switch {
		case ok && j.Dead && w.s.Now.Sub(end) > reclaimWindow:
			continue
		case ok && j.State == Admitted && !j.Dead && !w.s.Now.Before(end):
			w.dropAllocs(j)
			j.Dead = true
		}
		kept = append(kept, j)
	}
	w.s.Jobs = kept
}

// usage sums the GPUs each namespace's allocations hold.
func (w *world) usage() map[string]int {
	out := map[string]int{}
	for _, a := range w.s.Allocs {
		out[a.Namespace] += a.Devices[h200]
	}
	return out
}

// preemptedBack lists pairs where a victim later preempted its preemptor.
func (w *world) preemptedBack() []string {
	var out []string
	for p := range w.pairs {
		var a, b string
		fmt.Sscanf(replaceGt(p), "%s %s", &a, &b)
		if w.pairs[b+">"+a] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func replaceGt(s string) string {
	out := []byte(s)
	for i := range out {
		if out[i] == '>' {
			out[i] = ' '
		}
	}
	return string(out)
}
