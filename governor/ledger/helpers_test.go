package ledger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/internal/pgtest"
)

// pg is the package's throwaway PostgreSQL (nil when absent: pgMissing
// says why).
var (
	pg        *pgtest.Server
	pgMissing error
)

func TestMain(m *testing.M) {
	pg, pgMissing = pgtest.Start()
	if pgMissing != nil {
		fmt.Fprintf(os.Stderr, "\n!!! ledger: the PostgreSQL half of this suite DOES NOT RUN: %v\n\n", pgMissing)
	}
	code := m.Run()
	fillOnce.Range(func(_, v any) bool { v.(*DB).Close(); return true })
	if pg != nil {
		pg.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// eachBackend runs fn on a fresh SQLite file and a fresh PostgreSQL
// database. The PostgreSQL half is skipped, loudly, only when the server
// binaries are absent.
func eachBackend(t *testing.T, fn func(t *testing.T, db *DB)) {
	t.Run("sqlite", func(t *testing.T) {
		fn(t, openSQLite(t))
	})
	t.Run("postgres", func(t *testing.T) {
		if pg == nil {
			t.Skipf("PostgreSQL HALF NOT RUN: %v", pgMissing)
		}
		db, err := Open(context.Background(), DriverPostgres, pg.NewDB(t))
		must.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		fn(t, db)
	})
}

func openSQLite(t testing.TB) *DB {
	db, err := Open(context.Background(), DriverSQLite, filepath.Join(t.TempDir(), "ledger.db"))
	must.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// t0 is the fixtures' epoch.
var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// allocB builds allocation stubs.
type allocB struct{ a *api.AllocationListStub }

func mkAlloc(id, ns, job string) *allocB {
	return &allocB{a: &api.AllocationListStub{ID: id, Namespace: ns, JobID: job, NodeID: "n1", NodeName: "gpu-1",
		TaskGroup: "g", ClientStatus: "running", DesiredStatus: "run", CreateTime: t0.UnixNano(),
		TaskStates: map[string]*api.TaskState{}, AllocatedResources: &api.AllocatedResources{
			Tasks: map[string]*api.AllocatedTaskResources{}}}}
}

func (b *allocB) task(name string, start int, end int, failed bool) *allocB {
	ts := &api.TaskState{State: "running", StartedAt: at(start)}
	if end >= 0 {
		ts.State, ts.FinishedAt, ts.Failed = "dead", at(end), failed
	}
	b.a.TaskStates[name] = ts
	return b
}

func (b *allocB) devices(task, model string, n int) *allocB {
	tr := b.a.AllocatedResources.Tasks[task]
	if tr == nil {
		tr = &api.AllocatedTaskResources{Cpu: api.AllocatedCpuResources{CpuShares: 1000},
			Memory: api.AllocatedMemoryResources{MemoryMB: 1024}}
		b.a.AllocatedResources.Tasks[task] = tr
	}
	var vendor, typ, name string
	fmt.Sscanf(model, "%s", &name)
	vendor, typ = "nvidia", "gpu"
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", model, i)
	}
	tr.Devices = append(tr.Devices, &api.AllocatedDeviceResource{Vendor: vendor, Type: typ, Name: name, DeviceIDs: ids})
	return b
}

func (b *allocB) status(client, desired string) *allocB {
	b.a.ClientStatus, b.a.DesiredStatus = client, desired
	return b
}

// killed marks every task killed, as a stop leaves them.
func (b *allocB) killed() *allocB {
	for _, ts := range b.a.TaskStates {
		ts.Events = append(ts.Events, &api.TaskEvent{Type: api.TaskKilled})
	}
	return b
}

func (b *allocB) index(i uint64) *allocB { b.a.ModifyIndex = i; return b }

func (b *allocB) preemptedBy(id string) *allocB { b.a.PreemptedByAllocation = id; return b }

func (b *allocB) build() *api.AllocationListStub { return b.a }

// gpuNode builds a node stub with n healthy devices of a model in a pool.
func gpuNode(id, pool, model string, n, unhealthy int) *api.NodeListStub {
	inst := make([]*api.NodeDevice, n)
	for i := range inst {
		inst[i] = &api.NodeDevice{ID: fmt.Sprintf("%s-%d", id, i), Healthy: i >= unhealthy}
	}
	return &api.NodeListStub{ID: id, NodePool: pool, Status: "ready", SchedulingEligibility: "eligible",
		NodeResources: &api.NodeResources{Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu",
			Name: model, Instances: inst}}}}
}

// sumDeviceMS sums the device time of rows.
func sumDeviceMS(rows []Usage) int64 {
	var n int64
	for _, r := range rows {
		n += r.DeviceMS
	}
	return n
}
