//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/internal/testcluster"
)

// requeueConfig: a 1 s cycle, a 5 s requeue back-off (the job stays
// queued long enough to be seen there), and the ledger for the audit log.
const requeueConfig = `
cycle_interval = "1s"
backoff_base   = "5s"
backoff_cap    = "10s"
ledger { path = %q }
`

// TestE2E_Requeue: a running checkpointing toy trainer of team-a on a real
// ACL cluster (ckpt driver, inventory GPUs). team-b's token gets 403 from
// `allotctl job requeue` and nothing changes; team-a's token requeues it:
// the task checkpoints on the way out, the job is held in the queue,
// admitted again after the back-off and resumes from the checkpointed
// step; the decision and the audit log name team-a's token.
func TestE2E_Requeue(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	inv := writeInventory(t, dir, "gpu-1", 4)
	c := testcluster.New(t, testcluster.Options{ACL: true, Plugins: []string{"nomad-device-accel", "nomad-driver-ckpt"},
		Clients: []testcluster.ClientSpec{{Name: "gpu-1", NodePool: "gpu",
			PluginConfig: map[string]string{
				"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv),
				"nomad-driver-ckpt": fmt.Sprintf("checkpoint_root = %q\npoll_interval = \"100ms\"\nsaved_event_interval = \"1s\"\n%s",
					root, testcluster.CkptUnisolated),
			},
			Ready: testcluster.HasDevices("nvidia/gpu/H200", 4)}}})
	for _, ns := range []string{"team-a", "team-b"} {
		_, err := c.API.Namespaces().Register(&api.Namespace{Name: ns,
			Meta: map[string]string{"allot.quota.gpu": "2", "allot.limit.gpu": "2"}}, nil)
		must.NoError(t, err)
	}
	nomad, err := testcluster.NomadBinary()
	must.NoError(t, err)
	allotctl := filepath.Join(dir, "allotctl")
	must.NoError(t, testcluster.GoBuild("./cli", allotctl))
	trainer := testcluster.BuildToyTrainer(t, dir)
	cfg := filepath.Join(dir, "governor.hcl")
	must.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(requeueConfig, filepath.Join(dir, "ledger.db"))), 0o600))
	g := c.StartGovernor("-config", cfg, "-nomad-token", c.ManagementToken())
	tokens := map[string]*api.ACLToken{}
	for _, ns := range []string{"team-a", "team-b"} {
		name, rules, err := testcluster.TenantPolicy(ns)
		must.NoError(t, err)
		c.CreatePolicy(name, rules)
		tokens[ns] = c.CreateToken(ns+"-alice", name)
	}

	// team-a's trainer: 1 GPU, a step every 100 ms, a checkpoint every 10.
	src := fmt.Sprintf(trainTmpl, "a-train", "team-a", "standard", 1, trainer,
		`"-step-time", "100ms", "-save-every", "10"`, 1)
	p := filepath.Join(dir, "a-train.nomad.hcl")
	must.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	run := exec.Command(nomad, "job", "run", "-detach", p)
	run.Env = append(os.Environ(), "NOMAD_ADDR="+g.Addr, "NOMAD_NAMESPACE=", "NOMAD_TOKEN="+tokens["team-a"].SecretID)
	out, err := run.CombinedOutput()
	must.NoError(t, err, must.Sprintf("nomad job run: %s", out))
	first := c.WaitForAlloc("team-a", "a-train", 90*time.Second, testcluster.ClientStatus("running"))
	c.Eventually(30*time.Second, "a first checkpoint of its own", func() error {
		if !regexp.MustCompile(`checkpointed step \d+\n`).MatchString(c.TaskLogs(first.ID, "train", "stdout")) {
			return fmt.Errorf("no checkpoint yet")
		}
		return nil
	})

	ctl := func(ns string, args ...string) (string, string, error) {
		cmd := exec.Command(allotctl, args...)
		cmd.Env = append(os.Environ(), "NOMAD_ADDR="+g.Addr, "ALLOT_ADDR=", "NOMAD_NAMESPACE=", "NOMAD_TOKEN="+tokens[ns].SecretID)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	job := func() *api.Job {
		j, _, err := c.API.Jobs().Info("a-train", &api.QueryOptions{Namespace: "team-a"})
		must.NoError(t, err)
		return j
	}
	before := job()

	t.Run("another tenant's token is refused and nothing happens", func(t *testing.T) {
		_, stderr, err := ctl("team-b", "job", "requeue", "-namespace", "team-a", "-reason", "not mine", "a-train")
		must.Error(t, err)
		must.StrContains(t, stderr, `requeueing job "a-train" in namespace "team-a": Permission denied: requeueing a job needs the submit-job capability in namespace "team-a"`)
		after := job()
		must.Eq(t, *before.JobModifyIndex, *after.JobModifyIndex, must.Sprint("the job was not written"))
		must.False(t, *after.Stop)
		a, _, err := c.API.Allocations().Info(first.ID, nil)
		must.NoError(t, err)
		must.Eq(t, api.AllocClientStatusRunning, a.ClientStatus)
		must.StrNotContains(t, c.TaskLogs(first.ID, "train", "stdout"), "on request")
	})

	var res allotapi.RequeueResult
	t.Run("the tenant requeues its job", func(t *testing.T) {
		stdout, stderr, err := ctl("team-a", "job", "requeue", "-namespace", "team-a", "-reason", "e2e drain", "-json", "a-train")
		must.NoError(t, err, must.Sprintf("allotctl: %s", stderr))
		must.NoError(t, json.Unmarshal([]byte(stdout), &res))
		must.Eq(t, "queued", res.State)
		must.Eq(t, tokens["team-a"].AccessorID, res.Actor)
		must.Eq(t, "team-a-alice", res.ActorName)
		must.True(t, res.Audited, must.Sprint(res.AuditError))
		must.Eq(t, fmt.Sprintf("requeued by team-a-alice (%s): e2e drain", tokens["team-a"].AccessorID), res.Reason)
	})

	gov := &allotapi.Client{Address: g.Addr, Token: tokens["team-a"].SecretID}
	var saved int
	t.Run("back in the queue and checkpoint-stopped", func(t *testing.T) {
		// Held for the back-off (5 s from the requeue): the next cycles
		// show it queued, waiting on its back-off check.
		var w *allotapi.Why
		c.Eventually(4*time.Second, "a-train queued", func() error {
			var err error
			if w, err = gov.Why(context.Background(), "team-a", "a-train"); err != nil {
				return err
			}
			if w.State != "queued" {
				return fmt.Errorf("state %s: %s", w.State, w.Reason)
			}
			return nil
		})
		var backoff []allotapi.Check
		for _, ch := range w.Checks {
			if ch.Name == "backoff" && !ch.OK {
				backoff = append(backoff, ch)
			}
		}
		must.SliceLen(t, 1, backoff, must.Sprintf("checks %+v", w.Checks))
		j := job()
		must.True(t, held(j), must.Sprintf("stop %v, meta %v", *j.Stop, j.Meta))
		must.Eq(t, "1", j.Meta["allot.requeues"])
		c.Eventually(30*time.Second, "the checkpoint on request", func() error {
			m := regexp.MustCompile(`checkpointed step (\d+) on request`).FindStringSubmatch(c.TaskLogs(first.ID, "train", "stdout"))
			if m == nil {
				return fmt.Errorf("no checkpoint on request in %s", first.ID)
			}
			saved, _ = strconv.Atoi(m[1])
			return nil
		})
		must.Positive(t, saved)
	})

	t.Run("admitted again, resumes from its checkpoint", func(t *testing.T) {
		var next *api.AllocationListStub
		c.Eventually(60*time.Second, "a new running allocation", func() error {
			list, _, err := c.API.Jobs().Allocations("a-train", false, &api.QueryOptions{Namespace: "team-a"})
			if err != nil {
				return err
			}
			for _, a := range list {
				if a.ID != first.ID && a.ClientStatus == api.AllocClientStatusRunning {
					next = a
					return nil
				}
			}
			return fmt.Errorf("%d allocations, none new and running", len(list))
		})
		var step int
		c.Eventually(30*time.Second, "the resumed trainer's start line", func() error {
			m := regexp.MustCompile(`starting at step (\d+)`).FindStringSubmatch(c.TaskLogs(next.ID, "train", "stdout"))
			if m == nil {
				return fmt.Errorf("no start line yet")
			}
			step, _ = strconv.Atoi(m[1])
			return nil
		})
		t.Logf("checkpointed step %d on the requeue; the new allocation %s starts at step %d", saved, next.ID[:8], step)
		must.Eq(t, saved, step, must.Sprint("resumes from the step checkpointed on requeue"))
		must.Positive(t, step)
		j := job()
		must.False(t, *j.Stop)
		must.Eq(t, "admitted", j.Meta["allot.state"])
	})

	t.Run("the decision and the audit log name the actor", func(t *testing.T) {
		ds, err := gov.Decisions(context.Background())
		must.NoError(t, err)
		var found []allotapi.Decision
		for _, d := range ds.Decisions {
			if d.Kind == "requeue" && d.JobID == "a-train" {
				found = append(found, d)
			}
		}
		must.SliceLen(t, 1, found)
		must.Eq(t, "manual", found[0].Cause)
		must.Eq(t, res.Reason, found[0].Reason)

		req, err := http.NewRequest(http.MethodGet, g.Addr+"/allot/v1/audit?kind=job-requeue", nil)
		must.NoError(t, err)
		req.Header.Set("X-Nomad-Token", c.ManagementToken())
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		defer resp.Body.Close()
		must.Eq(t, http.StatusOK, resp.StatusCode)
		var audit ledger.AuditAnswer
		must.NoError(t, json.NewDecoder(resp.Body).Decode(&audit))
		must.SliceLen(t, 1, audit.Entries, must.Sprint("one requeue audited: team-b's refusal wrote nothing"))
		e := audit.Entries[0]
		must.Eq(t, tokens["team-a"].AccessorID, e.Actor)
		must.Eq(t, "team-a-alice", e.ActorName)
		must.Eq(t, "team-a", e.Namespace)
		must.Eq(t, "a-train", e.Subject)
		must.StrContains(t, e.Detail, "e2e drain")
	})
}
