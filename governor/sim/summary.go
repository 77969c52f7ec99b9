package sim

import (
	"math"
	"sort"
	"time"

	"github.com/allot-sh/allot/governor/engine"
)

// Stats summarises durations.
type Stats struct {
	N                        int
	Mean, P50, P95, P99, Max time.Duration
}

// NewStats computes the statistics of ds (nearest-rank percentiles).
func NewStats(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	var sum float64
	for _, d := range s {
		sum += float64(d)
	}
	pct := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		if i < 0 {
			i = 0
		}
		return s[i]
	}
	return Stats{N: len(s), Mean: time.Duration(sum / float64(len(s))), P50: pct(0.5), P95: pct(0.95),
		P99: pct(0.99), Max: s[len(s)-1]}
}

// TenantShare compares what a tenant received with what it was entitled
// to, in GPU-hours over the workload's span.
type TenantShare struct {
	Tenant string
	// Nominal is the tenant's GPU quota; Offered its offered load as a
	// fraction of the cluster; WithinNominal tells whether that load fits
	// its nominal share.
	Nominal       int
	Offered       float64
	WithinNominal bool
	Received      float64
	Entitled      float64
	// EntitledAllocated is the tenant's weighted max-min share of the GPUs
	// that were allocated (not of all GPUs), in GPU-hours: received ÷ it
	// judges the division apart from the GPUs left idle.
	EntitledAllocated float64
}

// Summary holds a run's headline metrics.
type Summary struct {
	Policy   Policy
	Jobs     int
	Finished int
	// Span is the workload's submission span over which rates and shares
	// are averaged.
	Span time.Duration
	// AllocRate and UsefulRate are mean fractions of the GPUs allocated,
	// and allocated to jobs whose allocations all run, over Span.
	AllocRate, UsefulRate float64
	// NetUsefulRate is UsefulRate less the GPU time of work preemptions
	// threw away within Span: GPUs that ran work done twice count once.
	// Useful allocation alone credits a policy for the work it discards.
	NetUsefulRate float64
	// Delivered is the work of finished jobs (GPUs × duration) over the
	// GPU-time of the whole run: allocation minus idle gang members,
	// preempted work and the drain at the end.
	Delivered float64
	Wait      Stats
	// WaitWithinNominal is the wait of jobs of tenants whose offered load
	// is within their nominal quota.
	WaitWithinNominal Stats
	WaitByTenant      map[string]Stats
	WaitByClass       map[string]Stats
	Completion        Stats
	Shares            []TenantShare
	// ShareError is Σ|received − entitled| / Σ entitled over all samples,
	// entitlement being the weighted max-min fair share of the demand.
	ShareError float64
	// ShareErrorIdle is the part of ShareError that idle GPUs alone cause:
	// Σ max(0, Σ entitled − Σ received) / Σ entitled. Under contention the
	// entitlement hands out every GPU, so any policy that leaves a tenth
	// of the GPUs idle has a share error of at least 0.1.
	ShareErrorIdle float64
	// ShareErrorAllocated is the share error of the GPUs that were
	// allocated: received against the weighted max-min division of the
	// allocated GPUs (not of all GPUs) among the same demands.
	ShareErrorAllocated float64
	// Jain is Jain's fairness index of received/entitled per tenant.
	Jain         float64
	Preemptions  int
	LostGPUHours float64
	// LongestWait counts jobs still waiting at the end up to End.
	LongestWait time.Duration
	// IdleWhileWaiting holds, by IdleCause name, the GPU-hours over Span
	// that sat free (or held by partly placed jobs) while work waited;
	// IdleWaitingTotal sums them.
	IdleWhileWaiting map[string]float64
	IdleWaitingTotal float64
}

// Summarize computes a run's metrics.
func Summarize(r *Result) Summary {
	sum := Summary{Policy: r.Policy, Jobs: len(r.Jobs), Preemptions: r.Preemptions,
		WaitByTenant: map[string]Stats{}, WaitByClass: map[string]Stats{}}
	for _, j := range r.Jobs {
		if j.Submit > sum.Span {
			sum.Span = j.Submit
		}
	}
	sum.Shares = shares(r, sum.Span)
	within := map[string]bool{}
	for _, s := range sum.Shares {
		within[s.Tenant] = s.WithinNominal
	}
	var all, in, jct []time.Duration
	byT, byC := map[string][]time.Duration{}, map[string][]time.Duration{}
	for _, j := range r.Jobs {
		sum.LostGPUHours += j.LostGPUSeconds / 3600
		w, ok := j.Wait()
		if !ok {
			w = r.End - j.Submit
		} else {
			all = append(all, w)
			byT[j.Tenant] = append(byT[j.Tenant], w)
			byC[j.Class] = append(byC[j.Class], w)
			if within[j.Tenant] {
				in = append(in, w)
			}
		}
		if w > sum.LongestWait {
			sum.LongestWait = w
		}
		if j.End >= 0 {
			sum.Delivered += float64(j.GPUs) * j.Duration.Seconds()
			sum.Finished++
			jct = append(jct, j.End-j.Submit)
		}
	}
	sum.Wait, sum.WaitWithinNominal, sum.Completion = NewStats(all), NewStats(in), NewStats(jct)
	for t, ds := range byT {
		sum.WaitByTenant[t] = NewStats(ds)
	}
	for c, ds := range byC {
		sum.WaitByClass[c] = NewStats(ds)
	}
	rates(r, sum.Span, &sum)
	sum.NetUsefulRate = sum.UsefulRate - discarded(r, sum.Span)
	if r.End > 0 {
		sum.Delivered /= float64(r.GPUs) * r.End.Seconds()
	}
	sum.Jain = jain(sum.Shares)
	sum.IdleWhileWaiting, sum.IdleWaitingTotal = idleHours(r, sum.Span)
	return sum
}

// discarded is the GPU time of work thrown away by preemptions within
// span, as a fraction of the GPUs' time over span.
func discarded(r *Result, span time.Duration) float64 {
	if r.GPUs == 0 || span <= 0 {
		return 0
	}
	var sec float64
	for _, l := range r.Losses {
		if l.T <= span {
			sec += l.GPUSeconds
		}
	}
	return sec / (float64(r.GPUs) * span.Seconds())
}

// idleHours integrates the samples' idle split over span, in GPU-hours.
func idleHours(r *Result, span time.Duration) (map[string]float64, float64) {
	out := map[string]float64{}
	var dt, total float64
	if len(r.Samples) > 1 {
		dt = (r.Samples[1].T - r.Samples[0].T).Hours()
	}
	for _, c := range IdleCauses() {
		out[c.String()] = 0
	}
	for _, s := range r.Samples {
		if s.T > span {
			break
		}
		for c, n := range s.Idle {
			out[IdleCause(c).String()] += float64(n) * dt
			total += float64(n) * dt
		}
	}
	return out, total
}

// rates sets sum's mean allocated and useful fractions and its share
// errors: the whole (ShareError), the floor idle GPUs set
// (ShareErrorIdle) and the error of the allocated GPUs against their own
// fair division (ShareErrorAllocated); one fair division per sample.
func rates(r *Result, span time.Duration, sum *Summary) {
	n := 0
	// ent and entSum add the same entitlements in two orders (per tenant,
	// per sample): each keeps its figure's rounding as it was.
	var alloc, useful, diff, ent, entSum, short, diffAlloc, got float64
	for _, s := range r.Samples {
		if s.T > span {
			break
		}
		n++
		alloc += float64(s.Allocated) / float64(r.GPUs)
		useful += float64(s.Useful) / float64(r.GPUs)
		fair := FairShare(r.GPUs, r.Entitled, r.claim(s))
		held := 0
		var e float64
		for i := range fair {
			diff += math.Abs(float64(s.Tenant[i]) - fair[i])
			ent += fair[i]
			e += fair[i]
			held += s.Tenant[i]
		}
		entSum += e
		short += math.Max(0, e-float64(held))
		for i, f := range FairShare(held, r.Entitled, r.claim(s)) {
			diffAlloc += math.Abs(float64(s.Tenant[i]) - f)
		}
		got += float64(held)
	}
	if got > 0 {
		sum.ShareErrorAllocated = diffAlloc / got
	}
	if entSum > 0 {
		sum.ShareErrorIdle = short / entSum
	}
	if n == 0 || ent == 0 {
		return
	}
	sum.AllocRate, sum.UsefulRate, sum.ShareError = alloc/float64(n), useful/float64(n), diff/ent
}

func shares(r *Result, span time.Duration) []TenantShare {
	out := make([]TenantShare, len(r.Tenants))
	idx := map[string]int{}
	for i, t := range r.Tenants {
		idx[t] = i
		out[i] = TenantShare{Tenant: t, Nominal: r.Entitled[i]}
	}
	for _, j := range r.Jobs {
		out[idx[j.Tenant]].Offered += float64(j.GPUs) * j.Duration.Seconds()
	}
	var dt float64
	if len(r.Samples) > 1 {
		dt = (r.Samples[1].T - r.Samples[0].T).Hours()
	}
	for _, s := range r.Samples {
		if s.T > span {
			break
		}
		fair := FairShare(r.GPUs, r.Entitled, r.claim(s))
		held := 0
		for i := range out {
			out[i].Received += float64(s.Tenant[i]) * dt
			out[i].Entitled += fair[i] * dt
			held += s.Tenant[i]
		}
		for i, f := range FairShare(held, r.Entitled, r.claim(s)) {
			out[i].EntitledAllocated += f * dt
		}
	}
	for i := range out {
		out[i].Offered /= float64(r.GPUs) * span.Seconds()
		out[i].WithinNominal = out[i].Offered <= float64(out[i].Nominal)/float64(r.GPUs)
	}
	return out
}

// claim is what each tenant may claim in sample s: its demand, no more
// than its hard limit (Result.Limit). No scheduler may give a tenant more
// than its limit, so the entitlement (FairShare) never counts it.
func (r *Result) claim(s Sample) []int {
	out := append([]int(nil), s.Demand...)
	for i := range out {
		if i < len(r.Limit) && r.Limit[i] > 0 && out[i] > r.Limit[i] {
			out[i] = r.Limit[i]
		}
	}
	return out
}

// FairShare divides capacity among tenants by weighted max-min fairness
// (water-filling): nobody gets more than its demand, and what one leaves
// goes to the others in proportion to their weights.
func FairShare(capacity int, weights, demand []int) []float64 {
	w, d := make([]float64, len(weights)), make([]float64, len(demand))
	for i := range demand {
		w[i], d[i] = float64(weights[i]), float64(demand[i])
	}
	return engine.WaterFill(float64(capacity), w, d)
}

func jain(ss []TenantShare) float64 {
	var sum, sq float64
	n := 0
	for _, s := range ss {
		if s.Entitled <= 0 {
			continue
		}
		x := s.Received / s.Entitled
		sum += x
		sq += x * x
		n++
	}
	if n == 0 || sq == 0 {
		return 0
	}
	return sum * sum / (float64(n) * sq)
}
