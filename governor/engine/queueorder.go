package engine

// Queue orders (Config.QueueOrder; governor config queue_order).
const (
	// QueueOrderClass (the default): class priority first, across
	// tenants, then the tenant's weighted share, then queued-at: a
	// standard job of a tenant far above its share goes before a low job
	// of a tenant below it.
	QueueOrderClass = "class"
	// QueueOrderShare: the tenant with the lowest weighted share first,
	// each tenant's jobs by class priority, then queued-at, as Kueue's
	// fair sharing orders the heads of its ClusterQueues by their share
	// and each ClusterQueue's workloads by priority. Classes that are
	// never victims (production) still go first: preemption cannot set
	// their order right afterwards. Class still decides preemption
	// within a tenant. Measured on the simulator's grid
	// (docs/simulator.md, round 23).
	QueueOrderShare = "share"
)

// queueTier is the part of a job's queue order that comes before the
// tenants' shares: its class priority under QueueOrderClass; under
// QueueOrderShare one tier for every preemptible class, behind the
// classes that are never victims (each its own tier, by priority).
func (c Config) queueTier(cl Class) int {
	if c.QueueOrder != QueueOrderShare || !cl.Preemptible {
		return cl.Priority
	}
	return minTier
}

// minTier is the tier of the preemptible classes under QueueOrderShare:
// below every class priority.
const minTier = -1 << 31
