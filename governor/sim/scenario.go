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
