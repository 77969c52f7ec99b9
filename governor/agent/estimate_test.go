package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/engine"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/governor/reconcile"
)

// TestLearnedRuntimesFromTheLedger: the wiring end to end without Nomad:
// five completed runs of ml/train in a real (SQLite) ledger become the
// reconciler's engine.Config.Runtimes estimate for the next ml/train
// (p90 of 10…50 min: 50 min), and a job nobody ran stays unknown.
func TestLearnedRuntimesFromTheLedger(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := ledger.Open(ctx, ledger.DriverSQLite, filepath.Join(t.TempDir(), "ledger.db"))
	must.NoError(t, err)
	t.Cleanup(func() { db.Close() }) // after cancel has stopped the learner
	end := time.Now().Add(-time.Hour).Truncate(time.Second)
	var segs []ledger.Segment
	for i := 1; i <= 5; i++ {
		d := time.Duration(10*i) * time.Minute
		segs = append(segs, ledger.Segment{AllocID: fmt.Sprintf("a%d", i), Model: "nvidia/gpu/H200", Namespace: "ml", JobID: "train",
			JobVersion: uint64(i), TaskGroup: "g", Devices: 1, Start: end.Add(-d), End: end.Add(time.Duration(i) * time.Second),
			Outcome: ledger.OutcomeComplete})
	}
	must.NoError(t, db.Ingest(ctx, segs, 5))

	rec := &reconcile.Reconciler{}
	l := learnRuntimes(rec)
	must.NotNil(t, rec.Config.Runtimes)
	next := &engine.Job{Namespace: "ml", ID: "train"}
	must.Zero(t, rec.Config.RuntimeOf(next))
	followRuntimes(ctx, l, &ledger.Service{DB: db}, hclog.NewNullLogger())
	deadline := time.Now().Add(10 * time.Second)
	for rec.Config.RuntimeOf(next) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling the learner's first sync, bounded by the deadline
	}
	must.Eq(t, 50*time.Minute+5*time.Second, rec.Config.RuntimeOf(next))
	must.Zero(t, rec.Config.RuntimeOf(&engine.Job{Namespace: "ml", ID: "other", Groups: []engine.Group{{Count: 1,
		Devices: []engine.DeviceRequest{{Name: "gpu", Count: 4}}}}}))
}
