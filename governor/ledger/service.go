package ledger

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/allot-sh/allot/governor/cluster"
	"github.com/allot-sh/allot/governor/config"
	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/reconcile"
)

// Options are what the governor hands the ledger.
type Options struct {
	Config config.Ledger
	// Client reads Nomad with the governor's own token.
	Client *api.Client
	// Store gives classes, queue times and checkpoints of jobs.
	Store *cluster.Store
	// Plans gives the latest plan: its queue is the waiting demand.
	Plans interface{ Latest() *engine.Plan }
	// Journal is the reconciler's decision journal, persisted here.
	Journal  *reconcile.Journal
	Auth     Authenticator
	Registry prometheus.Registerer
	Log      hclog.Logger
	// ManualRecorder leaves running Recorder to the caller (HA: only the
	// leader records, one term at a time; standbys only answer reports).
	ManualRecorder bool
}

// Service is a running ledger.
type Service struct {
	DB       *DB
	Recorder *Recorder
	Auditor  *Auditor
	API      *API
}

// Start opens the database (running its migrations) and starts recording
// until ctx ends.
func Start(ctx context.Context, o Options) (*Service, error) {
	c := o.Config
	dsn := c.Path
	if c.Driver == DriverPostgres {
		dsn = c.DSN
	}
	db, err := Open(ctx, c.Driver, dsn)
	if err != nil {
		return nil, err
	}
	nomad := &NomadAPI{Client: o.Client}
	s := &Service{DB: db, Auditor: &Auditor{DB: db, Auth: o.Auth}}
	s.API = &API{DB: db, Rates: Rates{Currency: c.Currency, Devices: c.DeviceRates, DefaultRate: c.DefaultDeviceRate,
		CPUGHzHour: c.CPUGHzHour, MemGiBHour: c.MemoryGiBHour, IdlePolicy: c.IdlePolicy}}
	s.Recorder = &Recorder{DB: db, Nomad: nomad, Stats: nomad, Audit: s.Auditor, Log: o.Log,
		AccrueEvery: c.AccrueEvery, Context: storeContext(o.Store)}
	if o.Plans != nil && o.Store != nil {
		s.Recorder.Waiting = func() map[PoolModel]int64 { return Waiting(o.Plans.Latest(), o.Store.Job) }
		s.Recorder.Jobs = o.Store.Job
	}
	if o.Journal != nil {
		s.Recorder.Decisions = func() []Decision { return FromJournal(o.Journal.Recent()) }
	}
	if o.Registry != nil {
		if err := o.Registry.Register(&Collector{DB: db, CacheFor: 15 * time.Second}); err != nil {
			return nil, fmt.Errorf("registering ledger metrics: %w", err)
		}
	}
	if !o.ManualRecorder {
		go s.Recorder.Run(ctx)
	}
	return s, nil
}

// Wrap records namespace writes that pass through h (the proxy).
func (s *Service) Wrap(h http.Handler) http.Handler { return s.Auditor.Wrap(h) }

func storeContext(st *cluster.Store) Context {
	if st == nil {
		return Context{}
	}
	return Context{
		Class: func(ns, id string) string {
			if j, ok := st.Job(ns, id); ok && j.Class != "" {
				return j.Class
			}
			return ""
		},
		QueuedAt: func(ns, id string) time.Time {
			if j, ok := st.Job(ns, id); ok {
				return j.QueuedAt
			}
			return time.Time{}
		},
		Checkpoint: st.LastCheckpoint,
		Requeued: func(ns, id string) (time.Time, string) {
			j, ok := st.Job(ns, id)
			if !ok || j.Requeues == 0 {
				return time.Time{}, ""
			}
			refs := strings.Fields(j.PreemptedBy)
			if len(refs) == 0 {
				return j.RequeuedAt, "governor"
			}
			return j.RequeuedAt, refs[len(refs)-1]
		},
	}
}

// waitsForCapacity reports whether a queued job would run if its pool had
// room: its only failing checks are fit and order, none permanent. A job
// held by its tenant's quota, limit, class or back-off is not a shortage.
func waitsForCapacity(v engine.Verdict) bool {
	failing := 0
	for _, c := range v.Checks {
		if c.OK {
			continue
		}
		failing++
		if c.Permanent || (c.Name != "fit" && c.Name != "order") {
			return false
		}
	}
	return failing > 0
}

// Blocked sums the devices of the allocations Nomad could not place
// (blocked evaluations: 1 + coalesced failures per group), per pool and
// model: admitted or direct jobs that wait in Nomad rather than in the
// governor's queue.
func Blocked(evals []*api.Evaluation, job func(ns, id string) (*engine.Job, bool)) map[PoolModel]int64 {
	out := map[PoolModel]int64{}
	for _, ev := range evals {
		j, ok := job(ev.Namespace, ev.JobID)
		if !ok {
			continue
		}
		for _, g := range j.Groups {
			m := ev.FailedTGAllocs[g.Name]
			if m == nil {
				continue
			}
			addDevices(out, j.NodePool, g, int64(1+m.CoalescedFailures))
		}
	}
	return out
}

func addDevices(out map[PoolModel]int64, pool string, g engine.Group, allocs int64) {
	pool = engine.PoolName(pool)
	for _, d := range g.Devices {
		if strings.Count(d.Name, "/") == 2 && allocs > 0 && d.Count > 0 {
			out[PoolModel{Pool: pool, Model: d.Name}] += allocs * int64(d.Count)
		}
	}
}

// Waiting sums the devices asked for by the queued jobs of plan that wait
// for capacity (count × devices of each group), per node pool and device
// model; requests that name no model ("nvidia/gpu") are not attributed.
func Waiting(plan *engine.Plan, job func(ns, id string) (*engine.Job, bool)) map[PoolModel]int64 {
	out := map[PoolModel]int64{}
	if plan == nil {
		return out
	}
	for _, v := range plan.Queue {
		j, ok := job(v.Namespace, v.JobID)
		if !ok || !waitsForCapacity(v) {
			continue
		}
		for _, g := range j.Groups {
			addDevices(out, j.NodePool, g, int64(g.Count))
		}
	}
	return out
}
