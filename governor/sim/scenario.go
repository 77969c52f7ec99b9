package sim

import (
	"fmt"
	"time"

	"github.com/allot-sh/allot/governor/sim/fleet"
	"github.com/allot-sh/allot/governor/sim/workload"
)

// Week is the standard scenario's span.
const Week = 7 * 24 * time.Hour

// Scenario is a cluster plus a generated workload.
type Scenario struct {
	Spec *fleet.Spec
	Jobs []*workload.Job
	// Params are the generator's parameters (zero for a trace).
	Params workload.Params
}

// Generate builds the workload of spec's tenants (their load shares) for
// jobs jobs over span at the given offered load.
func Generate(spec *fleet.Spec, seed int64, jobs int, span time.Duration, load float64) (*Scenario, error) {
	return GenerateWith(spec, workload.Params{Seed: seed, Jobs: jobs, Span: span, Load: load})
}

// StandardWeek is the workload of a standard row of the measurement grid
// and docs/simulator.md (allotctl sim run's defaults): 5,000 jobs over a
// week at offered load load.
func StandardWeek(seed int64, load float64) workload.Params {
	return workload.Params{Seed: seed, Jobs: 5000, Span: Week, Load: load}
}

// HeteroWeek is the workload of a heterogeneous row (scenarios/hetero.hcl;
// allotctl sim run -max-gpus 8 -services 40 -jobs 2000): 2,000 jobs of at
// most 8 GPUs over a week beside 40 long-running 1-GPU services.
func HeteroWeek(seed int64, load float64) workload.Params {
	p := StandardWeek(seed, load)
	p.Jobs, p.MaxGPUs, p.Services = 2000, 8, 40
	return p
}

// GenerateWith is Generate with every generator parameter (MaxGPUs,
// Services, …); the tenants and the capacity come from spec.
func GenerateWith(spec *fleet.Spec, p workload.Params) (*Scenario, error) {
	p.CapacityGPUs, p.Tenants = spec.GPUs(), nil
	for _, t := range spec.Tenants {
		if t.Load > 0 {
			p.Tenants = append(p.Tenants, workload.TenantLoad{Name: t.Name, Share: t.Load})
		}
	}
	js, err := workload.Generate(p)
	if err != nil {
		return nil, fmt.Errorf("generating the workload: %w", err)
	}
	return &Scenario{Spec: spec, Jobs: js, Params: p}, nil
}
