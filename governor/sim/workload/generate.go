package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"time"
)

// TenantLoad is one tenant of a generated workload and its share of the
// submitted jobs.
type TenantLoad struct {
	Name  string
	Share float64
}

// Params configures Generate. The distributions themselves are fixed and
// documented in README.md and docs/simulator.md.
type Params struct {
	Seed    int64
	Jobs    int
	Span    time.Duration
	Tenants []TenantLoad
	// CapacityGPUs and Load scale durations so that the offered work is
	// Load × CapacityGPUs × Span GPU-seconds; Load 0 keeps the raw
	// durations.
	CapacityGPUs int
	Load         float64
	// Pool is every job's node pool ("" for default).
	Pool string
	// MaxGPUs caps a job's GPUs (0: no cap; the size drawn is clamped, so
	// the other draws and the other jobs stay as without a cap).
	MaxGPUs int
	// Services adds this many long-running 1-GPU services (one
	// allocation, standard class, no checkpoint), submitted in the first
	// hour, running the whole span, tenants in turn; they come on top of
	// the offered load and from their own random stream.
	Services int
}

// sizes is the GPUs-per-job distribution: mostly 1-GPU jobs, a heavy tail
// of 8+ GPU gang jobs (Philly, PAI and Helios all report > 50 % single-GPU
// jobs while multi-node jobs take most GPU time).
var sizes = []struct {
	gpus int
	p    float64
}{{1, 0.62}, {2, 0.10}, {4, 0.10}, {8, 0.11}, {16, 0.04}, {32, 0.02}, {64, 0.01}}

// classes is the class mix of generated jobs.
var classes = []struct {
	name string
	p    float64
}{{"high", 0.10}, {"standard", 0.65}, {"low", 0.25}}

// Per-GPU host resources of generated allocations.
const (
	cpuPerGPU    = 6000
	memPerGPU    = 32768
	gpusPerAlloc = 8
	// medianMinutes and sigma define the log-normal duration of a 1-GPU
	// job; larger jobs run longer by (1 + 0.5·log2 gpus).
	medianMinutes = 25.0
	sigma         = 1.8
	minDuration   = time.Minute
	maxDuration   = 7 * 24 * time.Hour
)

// Validate reports what is wrong with p.
func (p *Params) Validate() error {
	switch {
	case p.Jobs < 1:
		return fmt.Errorf("jobs = %d, want ≥ 1", p.Jobs)
	case p.Span <= 0:
		return fmt.Errorf("span %v must be > 0", p.Span)
	case len(p.Tenants) == 0:
		return errors.New("no tenants")
	case p.Load < 0 || (p.Load > 0 && p.CapacityGPUs < 1):
		return errors.New("load needs a capacity of ≥ 1 GPU and must be ≥ 0")
	}
	for _, t := range p.Tenants {
		if t.Name == "" || !(t.Share > 0) {
			return fmt.Errorf("tenant %q: needs a name and a share > 0", t.Name)
		}
	}
	return nil
}

// Generate returns a seeded, reproducible workload (sorted by submit time).
func Generate(p Params) ([]*Job, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("workload parameters: %w", err)
	}
	r := rand.New(rand.NewSource(p.Seed))
	jobs := make([]*Job, 0, p.Jobs)
	for i := 0; i < p.Jobs; i++ {
		jobs = append(jobs, p.job(r, i))
	}
	if p.Load > 0 {
		scale(jobs, p.Load*float64(p.CapacityGPUs)*p.Span.Seconds())
	}
	jobs = append(jobs, p.services()...)
	Sort(jobs)
	return jobs, nil
}

// services returns the long-running services of p.
func (p *Params) services() []*Job {
	r := rand.New(rand.NewSource(p.Seed + 7919))
	out := make([]*Job, 0, p.Services)
	for i := 0; i < p.Services; i++ {
		out = append(out, &Job{ID: fmt.Sprintf("svc-%04d", i), Submit: time.Duration(r.Int63n(int64(time.Hour))).Truncate(time.Second),
			Tenant: p.Tenants[i%len(p.Tenants)].Name, Class: "standard", Pool: p.Pool, Gang: true, Duration: p.Span,
			Groups: []Group{{Name: "serve", Count: 1, GPUs: 1, Device: DefaultDevice, CPU: cpuPerGPU, MemoryMB: memPerGPU}}})
	}
	return out
}

func (p *Params) job(r *rand.Rand, i int) *Job {
	gpus := pickSize(r)
	if p.MaxGPUs > 0 && gpus > p.MaxGPUs {
		gpus = p.MaxGPUs
	}
	j := &Job{
		ID:     fmt.Sprintf("job-%06d", i),
		Submit: arrival(r, p.Span),
		Tenant: p.pickTenant(r),
		Class:  pickClass(r),
		Pool:   p.Pool,
		Gang:   true,
	}
	count, per := 1, gpus
	if gpus > gpusPerAlloc {
		count, per = gpus/gpusPerAlloc, gpusPerAlloc
	}
	j.Groups = []Group{{Name: "train", Count: count, GPUs: per, Device: DefaultDevice,
		CPU: int64(per) * cpuPerGPU, MemoryMB: int64(per) * memPerGPU}}
	minutes := medianMinutes * math.Exp(sigma*r.NormFloat64()) * (1 + 0.5*math.Log2(float64(gpus)))
	j.Duration = clamp(time.Duration(minutes * float64(time.Minute)))
	if r.Float64() < 0.75 {
		j.Checkpoint = []time.Duration{10 * time.Minute, 30 * time.Minute, time.Hour}[r.Intn(3)]
	}
	return j
}

func clamp(d time.Duration) time.Duration {
	switch {
	case d < minDuration:
		return minDuration
	case d > maxDuration:
		return maxDuration
	}
	return d
}

// arrival draws a submit time from a diurnal, weekly profile by
// rejection: the rate is 1 + 0.6·sin(2π(h−8)/24) over the hour of day h
// (peak 14:00, trough 02:00), halved on days 6 and 7 of each week.
func arrival(r *rand.Rand, span time.Duration) time.Duration {
	for {
		t := time.Duration(r.Float64() * float64(span))
		if r.Float64()*1.6 <= Rate(t) {
			return t.Truncate(time.Second)
		}
	}
}

// Rate is the relative submission rate at offset t (day 0 a Monday 00:00).
func Rate(t time.Duration) float64 {
	h := math.Mod(t.Hours(), 24)
	rate := 1 + 0.6*math.Sin(2*math.Pi*(h-8)/24)
	if day := int(t.Hours()/24) % 7; day >= 5 {
		rate /= 2
	}
	return rate
}

func pickSize(r *rand.Rand) int {
	x := r.Float64()
	for _, s := range sizes {
		if x < s.p {
			return s.gpus
		}
		x -= s.p
	}
	return sizes[0].gpus
}

func pickClass(r *rand.Rand) string {
	x := r.Float64()
	for _, c := range classes {
		if x < c.p {
			return c.name
		}
		x -= c.p
	}
	return classes[1].name
}

func (p *Params) pickTenant(r *rand.Rand) string {
	total := 0.0
	for _, t := range p.Tenants {
		total += t.Share
	}
	x := r.Float64() * total
	for _, t := range p.Tenants {
		if x < t.Share {
			return t.Name
		}
		x -= t.Share
	}
	return p.Tenants[len(p.Tenants)-1].Name
}

// scale multiplies every duration so the jobs' GPU-seconds add up to
// target (before clamping).
func scale(jobs []*Job, target float64) {
	total := 0.0
	for _, j := range jobs {
		total += float64(j.GPUs()) * j.Duration.Seconds()
	}
	if total <= 0 {
		return
	}
	f := target / total
	for _, j := range jobs {
		j.Duration = clamp(time.Duration(float64(j.Duration) * f)).Truncate(time.Second)
	}
}
