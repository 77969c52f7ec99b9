package sim

import (
	"math"
	"sort"
	"time"
)

// KendallTau is Kendall's τ-b between two rankings given as values per
// item (ties allowed): 1 when they order every pair alike, −1 when
// opposite. O(n²); meant for a few hundred jobs.
func KendallTau(a, b []float64) float64 {
	var conc, disc, tieA, tieB float64
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			da, db := sign(a[i]-a[j]), sign(b[i]-b[j])
			switch {
			case da == 0 && db == 0:
			case da == 0:
				tieA++
			case db == 0:
				tieB++
			case da == db:
				conc++
			default:
				disc++
			}
		}
	}
	den := math.Sqrt((conc + disc + tieA) * (conc + disc + tieB))
	if den == 0 {
		return 0
	}
	return (conc - disc) / den
}

func sign(x float64) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// Fidelity compares one trace run on the real stack and in the
// simulator, job by job.
type Fidelity struct {
	Jobs int
	// Tau is Kendall's τ-b between the start orders.
	Tau float64
	// WaitDiff summarises |real wait − simulated wait|; MeanWaitReal and
	// MeanWaitSim the mean waits.
	WaitDiff                  Stats
	MeanWaitReal, MeanWaitSim time.Duration
	// UtilReal and UtilSim are busy GPU-seconds (allocations running)
	// over GPUs × (last end − first submission).
	UtilReal, UtilSim float64
	// PreemptionsReal and PreemptionsSim count the preemptions of running
	// jobs; PreemptedReal, PreemptedSim and PreemptedBoth the jobs
	// preempted at least once on the real stack, in the simulator and on
	// both.
	PreemptionsReal, PreemptionsSim            int
	PreemptedReal, PreemptedSim, PreemptedBoth int
}

// Observed is one job's times on the real stack, offsets from the trace's
// start.
type Observed struct {
	ID            string
	GPUs          int
	Submit, Start time.Duration
	End           time.Duration
	// Preemptions counts the times the job was stopped after it started
	// and ran again later.
	Preemptions int
	// Ran is how long its allocations ran in all (zero: End − Start, a
	// job that ran once).
	Ran time.Duration
}

// busy is the job's GPU-seconds of running.
func (o Observed) busy() float64 {
	ran := o.Ran
	if ran == 0 {
		ran = o.End - o.Start
	}
	return float64(o.GPUs) * ran.Seconds()
}

// Compare matches observed jobs with the simulated result by ID.
func Compare(real []Observed, r *Result) Fidelity {
	byID := map[string]JobResult{}
	for _, j := range r.Jobs {
		byID[j.ID] = j
	}
	var ra, sa []float64
	var diffs []time.Duration
	var wr, ws time.Duration
	f := Fidelity{}
	for _, o := range real {
		sj, ok := byID[o.ID]
		if !ok || sj.Start < 0 {
			continue
		}
		f.Jobs++
		f.countPreemptions(o.Preemptions, sj.Preemptions)
		ra, sa = append(ra, o.Start.Seconds()), append(sa, sj.Start.Seconds())
		rw, sw := o.Start-o.Submit, sj.Start-sj.Submit
		wr, ws = wr+rw, ws+sw
		d := rw - sw
		if d < 0 {
			d = -d
		}
		diffs = append(diffs, d)
	}
	if f.Jobs == 0 {
		return f
	}
	f.Tau, f.WaitDiff = KendallTau(ra, sa), NewStats(diffs)
	f.MeanWaitReal, f.MeanWaitSim = wr/time.Duration(f.Jobs), ws/time.Duration(f.Jobs)
	f.UtilReal = utilization(real, r.GPUs)
	var sim []Observed
	for _, j := range r.Jobs {
		if j.Start >= 0 && j.End >= 0 {
			ran := j.Duration
			if j.GPUs > 0 {
				ran += time.Duration(j.LostGPUSeconds / float64(j.GPUs) * float64(time.Second))
			}
			sim = append(sim, Observed{ID: j.ID, GPUs: j.GPUs, Submit: j.Submit, Start: j.Start, End: j.End, Ran: ran})
		}
	}
	f.UtilSim = utilization(sim, r.GPUs)
	return f
}

// countPreemptions adds one job's preemptions on the real stack (real)
// and in the simulator (sim).
func (f *Fidelity) countPreemptions(real, sim int) {
	f.PreemptionsReal += real
	f.PreemptionsSim += sim
	if real > 0 {
		f.PreemptedReal++
	}
	if sim > 0 {
		f.PreemptedSim++
	}
	if real > 0 && sim > 0 {
		f.PreemptedBoth++
	}
}

// utilization is busy GPU-seconds over gpus × (last end − first submit).
func utilization(jobs []Observed, gpus int) float64 {
	if len(jobs) == 0 || gpus == 0 {
		return 0
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].Submit < jobs[b].Submit })
	first, last := jobs[0].Submit, time.Duration(0)
	var busy float64
	for _, j := range jobs {
		if j.End > last {
			last = j.End
		}
		busy += j.busy()
	}
	if last <= first {
		return 0
	}
	return busy / (float64(gpus) * (last - first).Seconds())
}
