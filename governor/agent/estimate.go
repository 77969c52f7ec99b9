package agent

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/allot-sh/allot/governor/estimate"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/reconcile"
)

// Learned run times (governor/estimate): how far back the ledger is read
// at start, and how often it is read again.
const (
	runtimeHistory = 30 * 24 * time.Hour
	runtimeSync    = time.Minute
)

// learnRuntimes gives the engine run times learned from finished jobs,
// for jobs without allot.max-runtime: reservations get a start and
// backfill can pass them. Call it before the reconciler runs or its
// Config is copied; followRuntimes then feeds it.
func learnRuntimes(rec *reconcile.Reconciler) *estimate.Learner {
	l := estimate.New()
	rec.Config.Runtimes = l.Estimate
	return l
}

// followRuntimes feeds l from the ledger's completed runs (which persist,
// so estimates survive a restart) until ctx ends. Without a ledger
// nothing is learned: only allot.max-runtime counts.
func followRuntimes(ctx context.Context, l *estimate.Learner, lg *ledger.Service, log hclog.Logger) {
	if lg == nil {
		log.Info("no ledger: run times are not learned; reservations count only on allot.max-runtime")
		return
	}
	tick := time.NewTicker(runtimeSync)
	go func() {
		defer tick.Stop()
		l.Follow(ctx, ledgerRuns{lg.DB}, time.Now().Add(-runtimeHistory), tick.C, func(err error) {
			log.Warn("learning run times from the ledger", "error", err)
		})
	}()
}

// ledgerRuns is the ledger as a source of completed runs.
type ledgerRuns struct{ db *ledger.DB }

func (s ledgerRuns) CompletedRuns(ctx context.Context, since time.Time, limit int) ([]estimate.Run, error) {
	runs, err := s.db.CompletedRuns(ctx, since, limit)
	out := make([]estimate.Run, len(runs))
	for i, r := range runs {
		out[i] = estimate.Run{Namespace: r.Namespace, JobID: r.JobID, Version: r.Version, Devices: r.Devices, Start: r.Start, End: r.End}
	}
	return out, err
}
