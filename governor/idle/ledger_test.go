package idle

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/ledger"
)

func TestLedgerRecordsLadder(t *testing.T) {
	ctx := context.Background()
	db, err := ledger.Open(ctx, ledger.DriverSQLite, filepath.Join(t.TempDir(), "ledger.db"))
	must.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	rec := LedgerRecorder{DB: db}
	c := func(alloc string, devs int, secs float64) Candidate {
		return Candidate{Watch: Watch{AllocID: alloc, Namespace: "ml", JobID: "j-" + alloc, Devices: devs}, Class: ClassIdleHeld,
			IdleSince: t0, IdleDeviceSeconds: secs}
	}
	must.NoError(t, rec.RecordIdle(ctx, t0, Event{Kind: Warn, Candidate: c("a", 2, 3600)}))
	must.NoError(t, rec.RecordIdle(ctx, t0, Event{Kind: Reclaim, Candidate: c("a", 2, 7200), Action: ActionCheckpoint}))
	must.NoError(t, rec.RecordIdle(ctx, t0, Event{Kind: Warn, Candidate: c("b", 1, 1800)}))
	must.NoError(t, rec.RecordIdle(ctx, t0, Event{Kind: Cancel, Candidate: c("b", 1, 1800)}))
	must.NoError(t, rec.RecordZombie(ctx, Zombie{Node: "n1", DeviceID: "g1", Since: t0, LastSeen: t0, MemoryMiB: 900, Processes: 1}))

	got, err := LedgerTotals(ctx, db, ledger.AuditQuery{})
	must.NoError(t, err)
	must.Eq(t, &Totals{Namespace: "ml", Warnings: 2, Reclaims: 1, IdleGPUHours: 2.5, ReclaimedGPUHours: 2, ReleasedDevices: 2}, got["ml"])
	n, err := db.Verify(ctx)
	must.NoError(t, err)
	must.Eq(t, 5, n)
	s := NewService(Options{Ledger: db, Defaults: DefaultPolicy(), Period: period})
	must.Eq(t, 2.0, s.Answer(nil, true).Totals[0].ReclaimedGPUHours)
	must.Len(t, 0, s.Answer(func(string) bool { return true }, false).Totals, must.Sprint("no namespace known yet: nothing readable"))
	zs, err := db.Entries(ctx, ledger.AuditQuery{Kind: KindZombie})
	must.NoError(t, err)
	must.Len(t, 1, zs)
	must.Eq(t, "n1/g1", zs[0].Subject)
}
