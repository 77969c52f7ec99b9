//go:build e2e

package ledger_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/cli/app"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/internal/pgtest"
	"github.com/allot-sh/allot/internal/testcluster"
)

const inventoryH200 = `
seed = %q
gpu "H200" {
  count              = 4
  memory_mib         = 143771
  compute_capability = "9.0"
  power_limit_w      = 700
}
`

const inventoryL4 = `
seed = %q
gpu "L4" {
  count              = 2
  memory_mib         = 23034
  compute_capability = "8.9"
  power_limit_w      = 72
}
`

// ledgerJob runs `sleep secs; exit code` on count devices of model in
// pool, with no restart and no reschedule: one allocation, one outcome.
const ledgerJob = `
job %q {
  namespace = %q
  type      = "batch"
  node_pool = %q
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "sleep %d; exit %d"]
      }
      resources {
        cpu    = 100
        memory = 64
        device "nvidia/gpu/%s" { count = %d }
      }
    }
  }
}
`

// ledgerEnv is the shared state of TestE2E_Ledger.
type ledgerEnv struct {
	t       *testing.T
	c       *testcluster.Cluster
	dir     string
	sqlite  string
	pgDSN   string
	a, b    *testcluster.Governor // a: SQLite, governs; b: PostgreSQL, governs nothing
	alice   *api.ACLToken
	rng     *rand.Rand
	jobs    []string // "ns/id"
	kills   int
	stopped int
	// downNode is the node made ineligible while it is.
	downNode string
}

func newLedgerEnv(t *testing.T) *ledgerEnv {
	dir := t.TempDir()
	var clients []testcluster.ClientSpec
	for _, cl := range []struct{ name, pool, inv, model string }{
		{"train-1", "train", inventoryH200, "H200"}, {"train-2", "train", inventoryH200, "H200"},
		{"infer-1", "infer", inventoryL4, "L4"},
	} {
		p := filepath.Join(dir, cl.name+".hcl")
		must.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(cl.inv, cl.name)), 0o644))
		n := 4
		if cl.model == "L4" {
			n = 2
		}
		clients = append(clients, testcluster.ClientSpec{Name: cl.name, NodePool: cl.pool,
			PluginConfig: map[string]string{"nomad-device-accel": fmt.Sprintf("inventory_file = %q", p)},
			Ready:        testcluster.HasDevices("nvidia/gpu/"+cl.model, n)})
	}
	c := testcluster.New(t, testcluster.Options{ACL: true, Plugins: []string{"nomad-device-accel"}, Clients: clients})
	e := &ledgerEnv{t: t, c: c, dir: dir, sqlite: filepath.Join(dir, "ledger.db"), rng: rand.New(rand.NewSource(time.Now().UnixNano()))}
	e.namespace("team-a", map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "8"})
	e.namespace("team-b", map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "8"})
	e.namespace("team-c", map[string]string{"allot.cohort": "infer", "allot.quota.gpu": "16"})
	var err error
	e.alice, _, err = c.API.ACLTokens().Create(&api.ACLToken{Name: "alice", Type: "management"}, nil)
	must.NoError(t, err)
	e.a = c.StartGovernor("-config", e.config("governor-a.hcl", `ledger {
  path         = %q
  accrue_every = "2s"
  currency     = "EUR"
  device_rates = { "nvidia/gpu/H200" = 4.0, "nvidia/gpu/L4" = 0.8 }
}`, e.sqlite), "-nomad-token", c.ManagementToken())
	e.a.LogPath = filepath.Join(dir, "governor-a.log")
	return e
}

// startPostgresGovernor starts a second governor that governs no
// namespace (it never acts) and keeps its ledger on PostgreSQL.
func (e *ledgerEnv) startPostgresGovernor(pg *pgtest.Server) {
	e.pgDSN = pg.NewDB(e.t)
	e.b = e.c.StartGovernor("-config", e.config("governor-b.hcl", `governed_namespaces = ["ledger-only-none"]
ledger {
  driver       = "postgres"
  dsn          = %q
  accrue_every = "2s"
}`, e.pgDSN), "-nomad-token", e.c.ManagementToken())
	e.b.LogPath = filepath.Join(e.dir, "governor-b.log")
}

func (e *ledgerEnv) config(name, ledgerBlock, arg string) string {
	p := filepath.Join(e.dir, name)
	body := "cycle_interval = \"1s\"\n" + fmt.Sprintf(ledgerBlock, arg) + "\n"
	must.NoError(e.t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func (e *ledgerEnv) namespace(name string, meta map[string]string) {
	_, err := e.c.API.Namespaces().Register(&api.Namespace{Name: name, Meta: meta}, nil)
	must.NoError(e.t, err)
}

// submit registers a job straight to Nomad (the governor governs it all
// the same: it need not be up to take it).
func (e *ledgerEnv) submit(ns, id, pool, model string, count, secs, exit int) {
	e.t.Helper()
	src := fmt.Sprintf(ledgerJob, id, ns, pool, secs, exit, model, count)
	job, err := testcluster.ParseHCL(id+".nomad.hcl", []byte(src))
	must.NoError(e.t, err)
	_, _, err = e.c.API.Jobs().Register(job, &api.WriteOptions{Namespace: ns})
	must.NoError(e.t, err)
	e.jobs = append(e.jobs, ns+"/"+id)
}

// submitThrough registers a job through governor g's proxy, as a user
// would: a job that does not fit is registered held and queued.
func (e *ledgerEnv) submitThrough(g *testcluster.Governor, ns, id, pool, model string, count, secs, exit int) {
	e.t.Helper()
	job, err := testcluster.ParseHCL(id+".nomad.hcl", []byte(fmt.Sprintf(ledgerJob, id, ns, pool, secs, exit, model, count)))
	must.NoError(e.t, err)
	cfg := api.DefaultConfig()
	cfg.Address, cfg.SecretID = g.Addr, e.c.ManagementToken()
	client, err := api.NewClient(cfg)
	must.NoError(e.t, err)
	_, _, err = client.Jobs().Register(job, &api.WriteOptions{Namespace: ns})
	must.NoError(e.t, err)
	e.jobs = append(e.jobs, ns+"/"+id)
}

// stopJob stops a job as a user would (nomad job stop).
func (e *ledgerEnv) stopJob(key string) {
	ns, id, _ := strings.Cut(key, "/")
	_, _, err := e.c.API.Jobs().Deregister(id, false, &api.WriteOptions{Namespace: ns})
	must.NoError(e.t, err)
	e.stopped++
}

// setEligible marks a client's node (in)eligible for scheduling.
func (e *ledgerEnv) setEligible(client string, eligible bool) {
	node := e.c.Node(e.c.Client(client))
	_, err := e.c.API.Nodes().ToggleEligibility(node.ID, eligible, nil)
	must.NoError(e.t, err)
	e.downNode = node.ID
	if eligible {
		e.downNode = ""
	}
}

// killOne kills a governor with SIGKILL and starts it again.
func (e *ledgerEnv) killOne() {
	g := e.a
	if e.b != nil && e.rng.Intn(2) == 0 {
		g = e.b
	}
	g.Kill()
	g.Start()
	e.kills++
}

// allotctl runs allotctl in-process against governor g.
func (e *ledgerEnv) allotctl(g *testcluster.Governor, token string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	full := append([]string{"allotctl"}, args...)
	full = append(full, "-address", g.Addr, "-token", token)
	code := app.Run(context.Background(), full, &out, &errOut)
	return code, out.String(), errOut.String()
}

// workload submits random jobs (completions, failures, user stops) for
// about d, half straight to Nomad, half through governor A (queued when
// they do not fit, which is what lets the governor reclaim and preempt),
// killing a governor every few seconds.
func (e *ledgerEnv) workload(d time.Duration) {
	start, end := time.Now(), time.Now().Add(d)
	drained := false
	nextKill := time.Now().Add(time.Duration(2+e.rng.Intn(5)) * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		ns := []string{"team-a", "team-b"}[e.rng.Intn(2)]
		exit := 0
		if e.rng.Intn(5) == 0 {
			exit = 1
		}
		id := fmt.Sprintf("w%03d", i)
		if i%2 == 0 {
			e.submit(ns, id, "train", "H200", 1+e.rng.Intn(2), 2+e.rng.Intn(9), exit)
		} else {
			e.submitThrough(e.a, ns, id, "train", "H200", 1+e.rng.Intn(2), 2+e.rng.Intn(9), exit)
		}
		if i > 3 && e.rng.Intn(4) == 0 {
			e.stopJob(e.jobs[len(e.jobs)-1-e.rng.Intn(4)])
		}
		// train-2 is ineligible for the middle third: its free devices
		// are Down, its running work stays Allocated.
		if since := time.Since(start); !drained && since > d/3 || drained && since > 2*d/3 && e.downNode != "" {
			e.setEligible("train-2", drained)
			drained = true
		}
		if time.Now().After(nextKill) {
			e.killOne()
			nextKill = time.Now().Add(time.Duration(2+e.rng.Intn(5)) * time.Second)
		}
		pace := time.NewTimer(time.Duration(300+e.rng.Intn(1000)) * time.Millisecond)
		<-pace.C // pacing arrivals, not waiting for a state
	}
}

// drain stops every job and waits until every allocation is terminal.
func (e *ledgerEnv) drain() {
	for _, key := range e.jobs {
		ns, id, _ := strings.Cut(key, "/")
		_, _, _ = e.c.API.Jobs().Deregister(id, false, &api.WriteOptions{Namespace: ns})
	}
	e.c.Eventually(2*time.Minute, "every allocation terminal", func() error {
		allocs, _, err := e.c.API.Allocations().List(&api.QueryOptions{Namespace: "*"})
		if err != nil {
			return err
		}
		for _, a := range allocs {
			if a.ClientStatus != "complete" && a.ClientStatus != "failed" && a.ClientStatus != "lost" {
				return fmt.Errorf("allocation %s of %s/%s is %s", a.ID[:8], a.Namespace, a.JobID, a.ClientStatus)
			}
		}
		return nil
	})
}

func (e *ledgerEnv) openSQLite() *ledger.DB {
	db, err := ledger.Open(context.Background(), ledger.DriverSQLite, e.sqlite)
	must.NoError(e.t, err)
	e.t.Cleanup(func() { db.Close() })
	return db
}

func (e *ledgerEnv) openPostgres() *ledger.DB {
	db, err := ledger.Open(context.Background(), ledger.DriverPostgres, e.pgDSN)
	must.NoError(e.t, err)
	e.t.Cleanup(func() { db.Close() })
	return db
}
