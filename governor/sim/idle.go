package sim

import (
	"sort"
	"strconv"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/sim/workload"
)

// IdleCause names why GPUs sat idle while work waited.
type IdleCause int

// The causes, in report order.
const (
	// IdleLimits: a waiting job would fit the free GPUs but its tenant's
	// limit or quota (or class) holds it back.
	IdleLimits IdleCause = iota
	// IdleReservation: a waiting job would fit but waits behind a starving
	// head whose reservation protects the capacity.
	IdleReservation
	// IdleHold: a waiting job would fit but would borrow past its
	// tenant's fair share while a starving head of a tenant below its
	// nominal quota holds the cohort's lending (a borrow hold).
	IdleHold
	// IdleFragmentation: free GPUs that no waiting job's shape fits.
	IdleFragmentation
	// IdleCycle: a waiting job fits and passes every check the governor
	// last ran, but its next cycle has not run yet.
	IdleCycle
	// IdleChurn: a waiting job would fit but backs off after a preemption
	// (the restart gap of preemption churn).
	IdleChurn
	// IdleGang: GPUs held by allocations of a partly placed job, idle
	// until its last allocation runs.
	IdleGang
	numIdleCauses
)

// IdleCauses lists the causes in report order.
func IdleCauses() []IdleCause {
	out := make([]IdleCause, numIdleCauses)
	for i := range out {
		out[i] = IdleCause(i)
	}
	return out
}

// String names the cause.
func (c IdleCause) String() string {
	return [...]string{"tenant limits", "reservations", "borrow holds", "fragmentation", "cycle delay", "preemption back-off", "partly placed jobs"}[c]
}

// causeOf maps the first failing check of a held job's latest verdict
// (nil: none yet) to the cause that keeps it off free GPUs it would fit.
func causeOf(check *engine.Check) IdleCause {
	if check == nil {
		return IdleCycle
	}
	switch check.Name {
	case "limit", "quota", "class", "type":
		return IdleLimits
	case "order":
		if check.Cohort != "" {
			return IdleHold
		}
		return IdleReservation
	case "backoff":
		return IdleChurn
	}
	// Passed (or failed fit) at the last cycle and fits now, or submitted
	// since: the next cycle admits it.
	return IdleCycle
}

// idleSplit splits the free GPUs of this instant by cause when work
// waits: waiting jobs, in submission order, are packed first fit onto a
// copy of the free capacity, ignoring every governor rule; the GPUs a job
// would take go to the cause that holds it, the GPUs left free to
// fragmentation. GPUs of partly placed jobs count apart (IdleGang).
func (s *sim) idleSplit() [numIdleCauses]int {
	var out [numIdleCauses]int
	waiting := s.waiting()
	if len(waiting) == 0 {
		return out
	}
	free := make([][]int, len(s.nodes))
	cpu := make([]int64, len(s.nodes))
	mem := make([]int64, len(s.nodes))
	idle := 0
	for i, nd := range s.nodes {
		free[i] = append([]int(nil), nd.free...)
		cpu[i], mem[i] = nd.freeCPU, nd.freeMem
		idle += nd.freeGPUs()
	}
	for _, a := range s.live {
		if !a.job.running {
			out[IdleGang] += a.gpus
		}
	}
	failed := map[string]bool{}
	for _, j := range waiting {
		if idle <= 0 {
			break
		}
		shape := pendingShape(j)
		if failed[shape] {
			continue
		}
		n, ok := s.packFree(j, free, cpu, mem)
		if !ok {
			failed[shape] = true
			continue
		}
		c := IdleCycle
		if s.policy == Allot {
			c = causeOf(j.blocked)
		}
		out[c] += n
		idle -= n
	}
	out[IdleFragmentation] = idle
	return out
}

// waiting returns the jobs that wait for GPUs, in submission order: held
// by allot, or with allocations Nomad has not placed.
func (s *sim) waiting() []*jobRun {
	var out []*jobRun
	if s.policy == Allot {
		out = append(out, s.held...)
	}
	for _, j := range s.blocked {
		if !j.done && len(j.pending) > 0 {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].idx < out[b].idx })
	return out
}

// pendingGroups lists the group of every allocation j still needs.
func pendingGroups(j *jobRun) []int {
	if !j.held {
		return j.pending
	}
	var out []int
	for gi, g := range j.w.Groups {
		for k := 0; k < g.Count; k++ {
			out = append(out, gi)
		}
	}
	return out
}

func pendingShape(j *jobRun) string {
	b := make([]byte, 0, 32)
	b = append(b, j.w.Pool...)
	for _, gi := range pendingGroups(j) {
		g := &j.w.Groups[gi]
		b = append(b, '|')
		b = append(b, g.Device...)
		b = strconv.AppendInt(append(b, ','), int64(g.GPUs), 10)
		b = strconv.AppendInt(append(b, ','), g.CPU, 10)
		b = strconv.AppendInt(append(b, ','), g.MemoryMB, 10)
	}
	return string(b)
}

// packFree places every pending allocation of j first fit on the free
// capacity copies; on success it keeps them taken and returns the GPUs.
func (s *sim) packFree(j *jobRun, free [][]int, cpu, mem []int64) (int, bool) {
	pool := j.w.Pool
	if pool == "" {
		pool = "default"
	}
	var taken []freeTake
	gpus := 0
	for _, gi := range pendingGroups(j) {
		g := &j.w.Groups[gi]
		t, ok := s.takeFree(g, pool, free, cpu, mem)
		if !ok {
			for _, t := range taken {
				t.give(free, cpu, mem)
			}
			return 0, false
		}
		taken = append(taken, t)
		gpus += g.GPUs
	}
	return gpus, true
}

// freeTake is one allocation packed onto the free capacity copies.
type freeTake struct {
	n, d int
	g    *workload.Group
}

func (t freeTake) give(free [][]int, cpu, mem []int64) {
	cpu[t.n] += t.g.CPU
	mem[t.n] += t.g.MemoryMB
	if t.d >= 0 {
		free[t.n][t.d] += t.g.GPUs
	}
}

// takeFree takes one allocation of g on the first node of pool it fits.
func (s *sim) takeFree(g *workload.Group, pool string, free [][]int, cpu, mem []int64) (freeTake, bool) {
	for i, nd := range s.nodes {
		if !nd.n.Ready || nd.n.Pool != pool || cpu[i] < g.CPU || mem[i] < g.MemoryMB {
			continue
		}
		d := -1
		if g.GPUs > 0 {
			for k := range nd.n.Devices {
				if free[i][k] >= g.GPUs && groupMatches(&nd.n.Devices[k], g.Device) {
					d = k
					break
				}
			}
			if d < 0 {
				continue
			}
			free[i][d] -= g.GPUs
		}
		cpu[i] -= g.CPU
		mem[i] -= g.MemoryMB
		return freeTake{i, d, g}, true
	}
	return freeTake{}, false
}
