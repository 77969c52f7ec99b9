package config

import "github.com/allot-sh/allot/governor/engine"

// Engine maps the configuration onto the engine's. The daemon's wiring and
// the simulator both use it, so a simulated run decides with the same
// classes, timeouts and back-off as the governor.
func (c Config) Engine() engine.Config {
	ec := engine.Config{StarvationTimeout: c.StarvationTimeout, MoveMinRun: c.MoveMinRun, FairMinRun: c.FairMinRun, RequeueRest: c.RequeueRest,
		Classes:           map[string]engine.Class{},
		DisablePreemption: c.DisablePreemption, BackoffBase: c.BackoffBase, BackoffCap: c.BackoffCap,
		GangTimeout: c.GangTimeout, GovernSystemJobs: c.SystemJobs == SystemJobsGovern, Placement: c.Placement,
		Reclaim: c.Reclaim, ReclaimMaxLoss: c.ReclaimMaxLoss, FairShareGap: c.FairShareGap, FairClasses: c.FairShareClasses,
		FairShareRule: c.FairShareRule, QueueOrder: c.QueueOrder}
	for name, cl := range c.Classes {
		ec.Classes[name] = engine.Class{Priority: cl.Priority, Preemptible: cl.Preemptible, Restricted: cl.Restricted}
	}
	return ec
}
