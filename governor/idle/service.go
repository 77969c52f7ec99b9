package idle

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/allot-sh/allot/governor/ledger"
)

// Reclaimer carries out a reclaim: a checkpoint-aware stop and requeue
// (ActionCheckpoint) or a stop (ActionStop). actuate.go implements it.
type Reclaimer interface {
	Reclaim(ctx context.Context, c Candidate, a Action) error
}

// Recorder keeps warnings, cancellations, reclaims and zombies (the
// ledger). Errors are logged; the ladder does not wait on the record.
type Recorder interface {
	RecordIdle(ctx context.Context, at time.Time, e Event) error
	RecordZombie(ctx context.Context, z Zombie) error
}

// Namespaces lists namespaces with their meta (for policies).
type Namespaces interface {
	Namespaces(ctx context.Context) ([]*api.Namespace, error)
}

// Options configure a Service.
type Options struct {
	Source     Source
	Namespaces Namespaces
	Detector   *Detector
	Reclaimer  Reclaimer // nil: warn only
	Recorder   Recorder  // nil: not recorded
	// Notifier writes warnings and withdrawals as task events (nil: none).
	Notifier Notifier
	// Leading reports whether this governor leads (HA); nil: it always
	// does. Only the leader notifies, reclaims and records.
	Leading func() bool
	// Ledger, when set, supplies the per-namespace totals of the answer.
	Ledger   *ledger.DB
	Metrics  *Metrics // nil: none
	Defaults Policy
	// WarnOnly are the priority classes never stopped (production).
	WarnOnly map[string]bool
	// ClassOf returns a job's priority class (nil: none known).
	ClassOf func(ns, jobID string) string
	// Governed reports whether the governor governs a namespace (nil: all).
	// Jobs elsewhere are only warned: a requeue would never be re-admitted.
	Governed func(ns string) bool
	// ZombieMemoryMiB is the memory a device may hold with no allocation.
	ZombieMemoryMiB int64
	Period          time.Duration
	// Workers bounds the concurrent stats requests.
	Workers int
	Now     func() time.Time
	Log     hclog.Logger
}

// Service runs the detector every period against Nomad.
type Service struct {
	o       Options
	mu      sync.Mutex
	tenants map[string]Tenant
	// notices is the task-event queue while Run runs (notify.go); set
	// before Run's loop starts, used only from its goroutine.
	notices chan pendingNotice
	// noticesDropped counts the notices the full queue refused this
	// period (notify); Run logs them once a period. Run's goroutine only.
	noticesDropped int
}

// NewService returns a service; call Run.
func NewService(o Options) *Service {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	if o.Detector == nil {
		o.Detector = NewDetector()
	}
	return &Service{o: o, tenants: map[string]Tenant{}}
}

// Detector is the service's detector (for reports).
func (s *Service) Detector() *Detector { return s.o.Detector }

// Run ticks every period until ctx ends. Each period is stamped with its
// place on the exact period grid from the first one (gridStamp), not the
// time its work starts, so the ladder's clock advances by whole periods and
// a grace of n periods ends on the n-th tick. A period whose work outlasts
// two periods makes the ticker drop a tick (a step then comes a period
// late); that is logged, at most once a minute.
func (s *Service) Run(ctx context.Context) {
	if s.o.Notifier != nil {
		s.notices = make(chan pendingNotice, noticeQueue)
		go s.sendNotices(ctx, s.notices)
	}
	t := time.NewTicker(s.o.Period)
	defer t.Stop()
	start := s.o.Now()
	now := start
	var slowLogged time.Time
	for {
		began := time.Now()
		if err := s.OnceAt(ctx, now); err != nil && ctx.Err() == nil {
			s.o.Log.Warn("idle detection period failed", "error", err)
		}
		s.logDroppedNotices()
		took := time.Since(began)
		s.o.Log.Debug("idle detection period done", "took", took)
		if took > s.o.Period && time.Since(slowLogged) > time.Minute {
			slowLogged = time.Now()
			s.o.Log.Warn("idle detection period took longer than the period; ladder steps may come a period late",
				"took", took, "period", s.o.Period)
		}
		select {
		case <-ctx.Done():
			return
		case tick := <-t.C:
			now = gridStamp(start, tick, s.o.Period)
		}
	}
}

// gridStamp places a tick on the exact grid start + k·period. The
// ticker's own times land a few microseconds after their schedule, by a
// different amount each time, so a deadline computed from one tick (the
// suspect's, plus grace) could fall just after the tick it is due on and
// move the step a whole period later.
func gridStamp(start, tick time.Time, period time.Duration) time.Time {
	k := (tick.Sub(start) + period/2) / period
	return start.Add(k * period)
}

// Once reads one period's telemetry and applies it, stamped now.
func (s *Service) Once(ctx context.Context) error { return s.OnceAt(ctx, s.o.Now()) }

// OnceAt reads one period's telemetry and applies it, stamped now.
func (s *Service) OnceAt(ctx context.Context, now time.Time) error {
	if err := s.refreshTenants(ctx); err != nil {
		return err
	}
	allocs, err := s.o.Source.Allocations(ctx)
	if err != nil {
		return err
	}
	hs := holders(allocs)
	jobs, err := s.o.Source.Jobs(ctx)
	if err != nil {
		return err
	}
	obs := s.observe(ctx, now, hs, jobIndex(jobs))
	events := s.o.Detector.Tick(obs, s.Tenant)
	for _, e := range events {
		s.handle(ctx, now, e)
	}
	s.zombies(ctx, now, allocs, hs)
	if s.o.Metrics != nil {
		s.o.Metrics.update(s.o.Detector)
	}
	return nil
}

// Tenant returns a namespace's policy (the defaults for an unknown one).
func (s *Service) Tenant(ns string) Tenant {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tenants[ns]; ok {
		return t
	}
	return Tenant{Namespace: ns, Policy: s.o.Defaults}
}

// Tenants returns every namespace's parsed policy.
func (s *Service) Tenants() map[string]Tenant {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Tenant, len(s.tenants))
	for k, v := range s.tenants {
		out[k] = v
	}
	return out
}

func (s *Service) refreshTenants(ctx context.Context) error {
	nss, err := s.o.Namespaces.Namespaces(ctx)
	if err != nil {
		return fmt.Errorf("listing namespaces: %w", err)
	}
	next := make(map[string]Tenant, len(nss))
	for _, ns := range nss {
		t := ParseTenant(ns.Name, ns.Meta, s.o.Defaults)
		if prev, ok := s.tenants[ns.Name]; len(t.Problems) > 0 && (!ok || fmt.Sprint(prev.Problems) != fmt.Sprint(t.Problems)) {
			s.o.Log.Warn("namespace idle policy has bad values; defaults kept for them", "namespace", ns.Name, "problems", t.Problems)
		}
		next[ns.Name] = t
	}
	s.mu.Lock()
	s.tenants = next
	s.mu.Unlock()
	return nil
}

type jobKey struct{ ns, id string }

func jobIndex(jobs []*api.JobListStub) map[jobKey]*api.JobListStub {
	out := make(map[jobKey]*api.JobListStub, len(jobs))
	for _, j := range jobs {
		if j != nil {
			out[jobKey{j.Namespace, j.ID}] = j
		}
	}
	return out
}

// observe reads every holder's stats with a bounded number of workers. A
// failed read is a missing sample.
func (s *Service) observe(ctx context.Context, now time.Time, hs []held, jobs map[jobKey]*api.JobListStub) []Observation {
	obs := make([]Observation, len(hs))
	sem := make(chan struct{}, s.o.Workers)
	var wg sync.WaitGroup
	for i, h := range hs {
		w := Watch{AllocID: h.alloc.ID, Namespace: h.alloc.Namespace, JobID: h.alloc.JobID, Devices: len(h.devices)}
		if s.o.ClassOf != nil {
			w.Priority = s.o.ClassOf(w.Namespace, w.JobID)
			w.Production = s.o.WarnOnly[w.Priority]
		}
		w.Ungoverned = s.o.Governed != nil && !s.o.Governed(w.Namespace)
		if j := jobs[jobKey{w.Namespace, w.JobID}]; j != nil {
			w.Service = j.Type == api.JobTypeService
			if j.SubmitTime > 0 {
				w.LastOwnerAction = time.Unix(0, j.SubmitTime)
			}
		}
		obs[i].Watch = w
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, h held) {
			defer func() { <-sem; wg.Done() }()
			groups, err := s.o.Source.AllocDeviceStats(ctx, h.alloc.ID)
			if err != nil {
				obs[i].Sample = Sample{At: now}
				return
			}
			obs[i].Sample = sample(now, h.devices, instances(groups))
		}(i, h)
	}
	wg.Wait()
	return obs
}
