package sim

import (
	"time"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/sim/fleet"
	"github.com/allot-sh/allot/governor/sim/workload"
)

// SnapshotAt runs jobs under nomad-fifo until simulated time t and returns
// what the governor's engine would see if it took over then: running jobs
// admitted, jobs Nomad could not place at all queued. It feeds engine
// benchmarks with realistic cluster states.
func SnapshotAt(spec *fleet.Spec, jobs []*workload.Job, t time.Duration, opts Options) (*engine.Snapshot, error) {
	opts.Horizon = t
	s, err := newSim(spec, jobs, NomadFIFO, opts)
	if err != nil {
		return nil, err
	}
	s.loop()
	s.now = t
	for _, j := range s.jobs {
		if j.w.Submit <= t && !j.done && len(j.allocs) == 0 {
			j.held = true
		} else if j.w.Submit <= t && !j.done {
			j.admitted = true
		}
	}
	return s.snapshot(), nil
}
