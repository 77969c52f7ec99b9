package sim

import (
	"time"

	"github.com/allot-sh/allot/governor/sim/fleet"
	"github.com/allot-sh/allot/governor/sim/workload"
)

// Sample is the cluster at one instant.
type Sample struct {
	T time.Duration
	// Allocated counts GPUs held by live allocations; Useful only those of
	// jobs whose allocations all run (a partly placed gang holds GPUs idle).
	Allocated, Useful int
	// Tenant and Demand hold, per tenant (Result.Tenants order), the GPUs
	// allocated and the GPUs its submitted, unfinished jobs ask for (a job
	// larger than its tenant's hard limit asks for nothing: it can never run).
	Tenant, Demand []int
	// Idle splits the GPUs free while work waited by cause (IdleCause
	// order); all zero when nothing waited.
	Idle [numIdleCauses]int
}

type collector struct {
	tenants   []string
	tIdx      map[string]int
	gpus      int
	alloc     int
	perTenant []int
	lastT     time.Duration
	gpuSec    float64
	lastCycle time.Duration
	cycles    int
	// proxyAdmits counts the submissions admitted at once (proxyAdmit).
	proxyAdmits int
	samples     []Sample
	preempts    int
	maxAlloc    int
	// pins and unpins count the admissions placed on a pin and the
	// pins removed again (engine.Unpin).
	pins, unpins int
	// losses records the work each preemption threw away.
	losses []Loss
}

func newCollector(spec *fleet.Spec, jobs []*workload.Job, _ Options) *collector {
	m := &collector{tenants: spec.TenantNames(), tIdx: map[string]int{}, gpus: spec.GPUs(), lastCycle: -1}
	for i, t := range m.tenants {
		m.tIdx[t] = i
	}
	m.perTenant = make([]int, len(m.tenants))
	return m
}

// advance integrates allocated GPU-seconds up to now.
func (m *collector) advance(now time.Duration) {
	m.gpuSec += float64(m.alloc) * (now - m.lastT).Seconds()
	m.lastT = now
}

func (m *collector) allocatedAt(now time.Duration, tenant string, delta int) {
	m.advance(now)
	m.alloc += delta
	m.perTenant[m.tIdx[tenant]] += delta
	if m.alloc > m.maxAlloc {
		m.maxAlloc = m.alloc
	}
}

func (m *collector) preemption(*jobRun) { m.preempts++ }

// lost records work thrown away at now.
func (m *collector) lost(now time.Duration, gpuSec float64) {
	if gpuSec > 0 {
		m.losses = append(m.losses, Loss{T: now, GPUSeconds: gpuSec})
	}
}

func (m *collector) sample(s *sim) {
	smp := Sample{T: s.now, Allocated: m.alloc, Tenant: append([]int(nil), m.perTenant...),
		Demand: make([]int, len(m.tenants))}
	for _, a := range s.live {
		if a.job.running {
			smp.Useful += a.gpus
		}
	}
	for _, j := range s.jobs {
		if j.w.Submit > s.now {
			break
		}
		if !j.done && !s.aboveLimit(j) {
			smp.Demand[m.tIdx[j.w.Tenant]] += j.w.GPUs()
		}
	}
	smp.Idle = s.idleSplit()
	m.samples = append(m.samples, smp)
}

func (m *collector) finish(s *sim) { m.advance(s.now) }

// aboveLimit reports whether job j asks for more GPUs than its tenant's
// hard limit (allot.limit.gpu): no scheduler that honours the limit can
// ever run it, so it is no demand the entitlement may count.
func (s *sim) aboveLimit(j *jobRun) bool {
	t := s.tenants[j.w.Tenant]
	if t == nil {
		return false
	}
	lim, ok := t.Limit["gpu"]
	return ok && lim > 0 && int64(j.w.GPUs()) > lim
}
