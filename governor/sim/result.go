package sim

import (
	"time"
)

// JobResult is one job's outcome.
type JobResult struct {
	ID, Tenant, Class string
	GPUs              int
	Submit            time.Duration
	// Duration is the job's work (from the workload).
	Duration time.Duration
	// Start is when all its allocations first ran, End when it finished;
	// both -1 when that never happened within the run.
	Start, End time.Duration
	// Ends counts how often the job ended (exactly once when it finished).
	Ends        int
	Preemptions int
	Requeues    int
	// LostGPUSeconds is GPU time thrown away by preemptions.
	LostGPUSeconds float64
}

// Wait is the queue wait (start − submit); ok false if it never started.
func (j *JobResult) Wait() (time.Duration, bool) {
	if j.Start < 0 {
		return 0, false
	}
	return j.Start - j.Submit, true
}

// Result is the outcome of one run.
type Result struct {
	Policy  Policy
	Nodes   int
	GPUs    int
	Tenants []string
	// Entitled is each tenant's nominal GPU quota (the fair-share weight
	// of the entitlement).
	Entitled []int
	// Limit is each tenant's hard GPU limit (allot.limit.gpu), 0 when it
	// has none: a tenant is entitled to no more than its limit.
	Limit   []int
	Jobs    []JobResult
	Samples []Sample
	// End is the simulated time at which the run stopped.
	End time.Duration
	// GPUSeconds is the time integral of allocated GPUs; MaxAllocated
	// its peak.
	GPUSeconds   float64
	MaxAllocated int
	Preemptions  int
	// Cycles counts the governor cycles (allot only); ProxyAdmits the
	// submissions the proxy admitted at once, without a cycle.
	Cycles, ProxyAdmits int
	// Pins counts the admissions Nomad placed on the engine's placement
	// pin, Unpins the pins removed again because Nomad could not place a
	// pinned job there (allot only).
	Pins, Unpins int
	// Losses lists the work preemptions threw away, when it happened.
	Losses []Loss
}

// Loss is the work one preemption threw away: at T, GPUSeconds of GPU
// time since the victim's last checkpoint (the GPU time is allocated,
// and counted as useful, while that work is done).
type Loss struct {
	T          time.Duration
	GPUSeconds float64
}

func (s *sim) result() *Result {
	r := &Result{Policy: s.policy, Nodes: len(s.nodes), GPUs: s.m.gpus, Tenants: s.m.tenants, Samples: s.m.samples,
		End: s.now, GPUSeconds: s.m.gpuSec, MaxAllocated: s.m.maxAlloc, Preemptions: s.m.preempts, Cycles: s.m.cycles,
		ProxyAdmits: s.m.proxyAdmits, Pins: s.m.pins, Unpins: s.m.unpins, Losses: s.m.losses}
	for _, t := range r.Tenants {
		r.Entitled = append(r.Entitled, int(s.tenants[t].Quota["gpu"]))
		r.Limit = append(r.Limit, int(s.tenants[t].Limit["gpu"]))
	}
	for _, j := range s.jobs {
		class := j.w.Class
		if class == "" {
			class = s.tenants[j.w.Tenant].DefaultClass
		}
		r.Jobs = append(r.Jobs, JobResult{ID: j.w.ID, Tenant: j.w.Tenant, Class: class, GPUs: j.w.GPUs(),
			Submit: j.w.Submit, Duration: j.w.Duration, Start: j.firstStart, End: j.end, Ends: j.ended, Preemptions: j.preempted,
			Requeues: j.requeues, LostGPUSeconds: j.lostGPUSec})
	}
	return r
}
