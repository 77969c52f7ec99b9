//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/internal/testcluster"
)

// env is the shared state of the governor e2e test.
type env struct {
	t     testing.TB
	c     *testcluster.Cluster
	g     *testcluster.Governor
	gov   *allotapi.Client
	nomad string
	dir   string
}

func newEnv(t testing.TB) *env {
	return newGPUEnv(t, map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "4"},
		map[string]string{"allot.quota.gpu": "2", "allot.limit.gpu": "4"})
}

// newGPUEnv starts a cluster of two 4-H200 nodes (pool gpu), creates the
// namespaces team-a and team-b with the meta given, and a governor.
func newGPUEnv(t testing.TB, teamA, teamB map[string]string) *env {
	dir := t.TempDir()
	c := testcluster.New(t, testcluster.Options{Plugins: []string{"nomad-device-accel"}, Clients: gpuClients(t, dir, 4, "gpu-1", "gpu-2")})
	nomad, err := testcluster.NomadBinary()
	must.NoError(t, err)
	e := &env{t: t, c: c, nomad: nomad, dir: dir}
	e.namespace("team-a", teamA)
	e.namespace("team-b", teamB)
	e.g = c.StartGovernor("-config", e.writeConfig())
	e.gov = &allotapi.Client{Address: e.g.Addr}
	return e
}

func (e *env) writeConfig() string {
	p := filepath.Join(e.dir, "governor.hcl")
	must.NoError(e.t, os.WriteFile(p, []byte("cycle_interval = \"1s\"\n"), 0o644))
	return p
}

func (e *env) namespace(name string, meta map[string]string) {
	_, err := e.c.API.Namespaces().Register(&api.Namespace{Name: name, Meta: meta}, nil)
	must.NoError(e.t, err)
}

// run submits a job with the real nomad CLI through the governor.
func (e *env) run(ns, id, note string, gpus int) string {
	e.t.Helper()
	p := jobSpec{ID: id, Namespace: ns, Note: note, GPUs: gpus}.write(e.t, e.dir)
	cmd := exec.Command(e.nomad, "job", "run", "-detach", p)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+e.g.Addr, "NOMAD_NAMESPACE=", "NOMAD_TOKEN=")
	out, err := cmd.CombinedOutput()
	must.NoError(e.t, err, must.Sprintf("nomad job run: %s", out))
	return string(out)
}

func (e *env) job(ns, id string) *api.Job {
	e.t.Helper()
	j, _, err := e.c.API.Jobs().Info(id, &api.QueryOptions{Namespace: ns})
	must.NoError(e.t, err)
	return j
}

func held(j *api.Job) bool { return *j.Stop && j.Meta["allot.state"] == "queued" }

// waitRunning waits until job ns/id has a running allocation.
func (e *env) waitRunning(ns, id string, timeout time.Duration) time.Duration {
	e.t.Helper()
	start := time.Now()
	e.c.WaitForAlloc(ns, id, timeout, testcluster.ClientStatus(api.AllocClientStatusRunning))
	return time.Since(start)
}

func (e *env) waitHeld(ns, id string) {
	e.t.Helper()
	e.c.Eventually(30*time.Second, ns+"/"+id+" held", func() error {
		if j := e.job(ns, id); !held(j) {
			return fmt.Errorf("job not held: stop=%v meta=%v", *j.Stop, j.Meta)
		}
		return nil
	})
}

// waitAdmitted waits until the governor admits ns/id, reporting its
// verdict while it does not.
func (e *env) waitAdmitted(ns, id string) {
	e.t.Helper()
	e.c.Eventually(30*time.Second, ns+"/"+id+" admitted", func() error {
		if j := e.job(ns, id); j.Meta["allot.state"] == "admitted" {
			return nil
		}
		w, err := e.gov.Why(context.Background(), ns, id)
		if err != nil {
			return err
		}
		return fmt.Errorf("still %s: %s", w.State, w.Reason)
	})
}

func (e *env) stop(ns, id string) {
	e.t.Helper()
	_, _, err := e.c.API.Jobs().Deregister(id, false, &api.WriteOptions{Namespace: ns})
	must.NoError(e.t, err)
}

func (e *env) why(ns, id string) *allotapi.Why {
	e.t.Helper()
	w, err := e.gov.Why(context.Background(), ns, id)
	must.NoError(e.t, err)
	return w
}

// waitWhy polls the governor's why of ns/id until its state is state and
// its reason contains each of want. A cycle writes its holds to Nomad
// before it publishes the plan the why API reads, so a job seen held in
// Nomad may still show its earlier verdict for a moment.
func (e *env) waitWhy(ns, id, state string, want ...string) *allotapi.Why {
	e.t.Helper()
	var w *allotapi.Why
	e.c.Eventually(30*time.Second, "the governor's why of "+ns+"/"+id, func() error {
		got, err := e.gov.Why(context.Background(), ns, id)
		if err != nil {
			return err
		}
		if got.State != state {
			return fmt.Errorf("state %s, want %s: %s", got.State, state, got.Reason)
		}
		for _, s := range want {
			if !strings.Contains(got.Reason, s) {
				return fmt.Errorf("reason lacks %q: %s", s, got.Reason)
			}
		}
		w = got
		return nil
	})
	return w
}

// newBenchEnv is newEnv for benchmarks: team-a may use exactly one node's
// four GPUs.
func newBenchEnv(b *testing.B) *env { return newEnv(b) }

// submit registers a 4-GPU-or-less job in team-a through the proxy with
// the api client, as the CLI would.
func (e *env) submit(id string, gpus int) {
	e.t.Helper()
	job, err := testcluster.ParseHCL(id+".nomad.hcl", []byte(jobSpec{ID: id, Namespace: "team-a", Note: "v1", GPUs: gpus}.HCL()))
	must.NoError(e.t, err)
	cfg := api.DefaultConfig()
	cfg.Address = e.g.Addr
	client, err := api.NewClient(cfg)
	must.NoError(e.t, err)
	_, _, err = client.Jobs().Register(job, &api.WriteOptions{Namespace: "team-a"})
	must.NoError(e.t, err)
}

func TestE2E_Governor(t *testing.T) {
	e := newEnv(t)

	t.Run("a job within quota runs", func(t *testing.T) {
		out := e.run("team-a", "a1.Train_X", "v1", 4)
		must.StrContains(t, out, "allot: job team-a/a1.Train_X admitted")
		e.waitRunning("team-a", "a1.Train_X", time.Minute)
		must.Eq(t, "admitted", e.job("team-a", "a1.Train_X").Meta["allot.state"])
	})

	t.Run("an over-quota job is held and the CLI prints the warning", func(t *testing.T) {
		out := e.run("team-a", "a2", "v1", 2)
		must.StrContains(t, out, "Job Warnings")
		must.StrContains(t, out, "is QUEUED")
		must.StrContains(t, out, "limit: needs 2 gpu; tenant team-a uses 4 of limit 4")
		must.True(t, held(e.job("team-a", "a2")))
		w := e.why("team-a", "a2")
		must.Eq(t, "queued", w.State)
		must.Eq(t, 1, w.TenantPosition)
	})

	t.Run("a user's edit of a held job is kept", func(t *testing.T) {
		j := e.job("team-a", "a2")
		j.Meta["note"] = "edited"
		_, _, err := e.c.API.Jobs().EnforceRegister(j, *j.JobModifyIndex, &api.WriteOptions{Namespace: "team-a"})
		must.NoError(t, err)
		e.waitHeld("team-a", "a2")
	})

	t.Run("when capacity frees the held job runs within seconds", func(t *testing.T) {
		e.stop("team-a", "a1.Train_X")
		took := e.waitRunning("team-a", "a2", 30*time.Second)
		t.Logf("held job running %s after the running job was stopped", took)
		j := e.job("team-a", "a2")
		must.Eq(t, "admitted", j.Meta["allot.state"])
		must.Eq(t, "edited", j.Meta["note"], must.Sprint("the governor kept the user's edit"))
	})

	t.Run("tenant B borrows A's idle quota up to its limit", func(t *testing.T) {
		out := e.run("team-b", "b1", "v1", 4)
		must.StrContains(t, out, "admitted")
		e.waitRunning("team-b", "b1", time.Minute)
		out = e.run("team-b", "b2", "v1", 1)
		must.StrContains(t, out, "limit: needs 1 gpu; tenant team-b uses 4 of limit 4")
	})

	t.Run("a direct registration over the limit is held", func(t *testing.T) {
		src := jobSpec{ID: "direct", Namespace: "team-a", Note: "v1", GPUs: 4}.HCL()
		job, err := testcluster.ParseHCL("direct.nomad.hcl", []byte(src))
		must.NoError(t, err)
		_, _, err = e.c.API.Jobs().Register(job, &api.WriteOptions{Namespace: "team-a"})
		must.NoError(t, err)
		e.waitHeld("team-a", "direct")
		// Held, it waits in the queue like any other job.
		e.waitWhy("team-a", "direct", "queued", "limit: needs 4 gpu; tenant team-a uses 2 of limit 4")
	})

	t.Run("a held job its user stops leaves the queue for good", func(t *testing.T) {
		out := e.run("team-a", "a3", "v1", 3) // 2 in use + 3 > limit 4
		must.StrContains(t, out, "is QUEUED")
		cmd := exec.Command(e.nomad, "job", "stop", "-detach", "-namespace", "team-a", "a3")
		cmd.Env = append(os.Environ(), "NOMAD_ADDR="+e.g.Addr, "NOMAD_TOKEN=")
		stopOut, err := cmd.CombinedOutput()
		must.NoError(t, err, must.Sprintf("nomad job stop: %s", stopOut))
		e.c.Eventually(30*time.Second, "a3 out of the queue", func() error {
			j := e.job("team-a", "a3")
			if _, queued := j.Meta["allot.state"]; queued || !*j.Stop {
				evals, _, _ := e.c.API.Jobs().Evaluations("a3", &api.QueryOptions{Namespace: "team-a"})
				var ev []string
				for _, x := range evals {
					ev = append(ev, fmt.Sprintf("%s@%d", x.TriggeredBy, x.JobModifyIndex))
				}
				return fmt.Errorf("a3: stop=%v version=%d meta=%v evals=%v", *j.Stop, *j.JobModifyIndex, j.Meta, ev)
			}
			return nil
		})
	})

	t.Run("a malformed quota is reported without a crash", func(t *testing.T) {
		e.namespace("team-bad", map[string]string{"allot.quota.gpu": "lots"})
		e.c.Eventually(30*time.Second, "tenant error reported", func() error {
			ts, err := e.gov.Tenants(context.Background())
			if err != nil {
				return err
			}
			for _, tn := range ts.Tenants {
				if tn.Namespace == "team-bad" && strings.Contains(tn.Error, `allot.quota.gpu="lots"`) {
					return nil
				}
			}
			return fmt.Errorf("no error for team-bad in %+v", ts.Tenants)
		})
		out := e.run("team-bad", "bad1", "v1", 1)
		must.StrContains(t, out, "namespace quota meta is invalid")
		must.StrContains(t, metrics(t, e.g.Addr), `allot_quota_config_errors{namespace="team-bad"} 1`)
	})

	t.Run("kill -9 and restart rebuilds the queue and admits once", func(t *testing.T) {
		var before *allotapi.Queue
		var err error
		e.c.Eventually(30*time.Second, "the queue to show every held job", func() error {
			if before, err = e.gov.Queue(context.Background()); err != nil {
				return err
			}
			if len(before.Jobs) != 3 {
				return fmt.Errorf("queue %v, want direct, b2 and bad1", queueKeys(before))
			}
			return nil
		})
		e.g.Kill()
		e.g.Start()
		var after *allotapi.Queue
		e.c.Eventually(30*time.Second, "queue rebuilt", func() error {
			after, err = e.gov.Queue(context.Background())
			return err
		})
		must.Eq(t, queueKeys(before), queueKeys(after))
		e.stop("team-b", "b1")
		e.waitAdmitted("team-b", "b2")
		e.waitRunning("team-b", "b2", 30*time.Second)
		versions, _, _, err := e.c.API.Jobs().Versions("b2", false, &api.QueryOptions{Namespace: "team-b"})
		must.NoError(t, err)
		admitted := 0
		for _, v := range versions {
			if v.Meta["allot.state"] == "admitted" && !*v.Stop {
				admitted++
			}
		}
		must.Eq(t, 1, admitted, must.Sprint("b2 admitted exactly once"))
	})

	t.Run("a job past its allot.max-runtime is stopped, journaled and counted", func(t *testing.T) {
		e.namespace("team-rt", map[string]string{"allot.quota.cpu": "1000"})
		// A CPU-only sleep of 600 s, which its allot.max-runtime cuts short.
		p := jobSpec{ID: "rt", Namespace: "team-rt", MaxRuntime: "3s"}.write(t, e.dir)
		must.StrContains(t, e.nomadCLI(t, "job", "run", "-detach", p), "allot: job team-rt/rt admitted")
		e.waitRunning("team-rt", "rt", time.Minute)
		// The journal and the counter follow the write Nomad shows: poll
		// for all three.
		counted := `allot_stopped_jobs_total{namespace="team-rt",reason="max-runtime"} 1`
		e.c.Eventually(60*time.Second, "rt stopped for its max-runtime, journaled and counted", func() error {
			if j := e.job("team-rt", "rt"); !*j.Stop || held(j) {
				return fmt.Errorf("rt: stop=%v meta=%v", *j.Stop, j.Meta)
			}
			ds, err := e.gov.Decisions(context.Background())
			if err != nil {
				return err
			}
			var recs []string
			for _, d := range ds.Decisions {
				if d.Namespace == "team-rt" {
					recs = append(recs, d.Kind+" "+d.Cause)
				}
			}
			if strings.Join(recs, ", ") != "stop max-runtime" {
				return fmt.Errorf("team-rt's decisions %q, want one stop max-runtime", recs)
			}
			if !strings.Contains(metrics(t, e.g.Addr), counted) {
				return fmt.Errorf("no %s in /metrics", counted)
			}
			return nil
		})
	})
}

// TestE2E_GovernorPassthrough: websockets (alloc exec) and the event
// stream work through the proxy with the nomad CLI.
func TestE2E_GovernorPassthrough(t *testing.T) {
	e := newEnv(t)
	e.run("team-a", "exec-me", "v1", 1)
	e.waitRunning("team-a", "exec-me", time.Minute)

	cmd := exec.Command(e.nomad, "alloc", "exec", "-namespace", "team-a", "-job", "exec-me", "/bin/echo", "through-the-proxy")
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+e.g.Addr, "NOMAD_TOKEN=")
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprintf("nomad alloc exec: %s", out))
	must.StrContains(t, string(out), "through-the-proxy")

	t.Run("a dispatch over the limit is refused with the reason", func(t *testing.T) {
		src := strings.Replace(jobSpec{ID: "param", Namespace: "team-a", Note: "v1", GPUs: 4}.HCL(), `type      = "batch"`,
			"type      = \"batch\"\n  parameterized {}", 1)
		p := filepath.Join(e.dir, "param.nomad.hcl")
		must.NoError(t, os.WriteFile(p, []byte(src), 0o644))
		e.nomadCLI(t, "job", "run", "-detach", p)
		cmd := exec.Command(e.nomad, "job", "dispatch", "-detach", "-namespace", "team-a", "param")
		cmd.Env = append(os.Environ(), "NOMAD_ADDR="+e.g.Addr, "NOMAD_TOKEN=", "NOMAD_NAMESPACE=")
		out, err := cmd.CombinedOutput()
		must.Error(t, err, must.Sprintf("dispatch should be refused: %s", out))
		must.StrContains(t, string(out), "limit: needs 4 gpu; tenant team-a uses 1 of limit 4")
		list, _, err := e.c.API.Jobs().List(&api.QueryOptions{Namespace: "team-a", Prefix: "param/dispatch-"})
		must.NoError(t, err)
		must.SliceEmpty(t, list, must.Sprint("no child was created"))
	})

	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Get(e.g.Addr + "/v1/event/stream?topic=Job:*&namespace=*&index=1")
	must.NoError(t, err)
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		must.NoError(t, err)
		if strings.TrimSpace(line) == "{}" {
			continue // heartbeat
		}
		must.StrContains(t, line, `"Topic":"Job"`)
		break
	}
}

// nomadCLI runs the nomad CLI against the governor and returns its output.
func (e *env) nomadCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(e.nomad, args...)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+e.g.Addr, "NOMAD_TOKEN=", "NOMAD_NAMESPACE=")
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprintf("nomad %v: %s", args, out))
	return string(out)
}

func queueKeys(q *allotapi.Queue) []string {
	var keys []string
	for _, j := range q.Jobs {
		keys = append(keys, fmt.Sprintf("%d:%s/%s", j.Position, j.Namespace, j.JobID))
	}
	return keys
}

func metrics(t *testing.T, addr string) string {
	resp, err := http.Get(addr + "/metrics")
	must.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return string(b)
}
