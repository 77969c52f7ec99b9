//go:build e2e

package dev

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// probeScript prints the task's uid, the GPU device nodes it sees, then
// runs the quickstart's Python toy trainer from the repository's
// jobspecs for a few steps and prints its LATEST.
const probeScript = `echo "uid=$(id -u)"
echo "gpus=$(ls /dev | grep -E '^nvidia[0-9]+$' | tr '\n' ' ')"
python3 %s/toy_train.py --steps 3 --save-every 1 --step-time 0.01 2>&1 && echo "latest=$(head -1 "$ALLOT_CHECKPOINT_DIR/LATEST")"`

// probeJob is a 1-GPU ckpt batch job in ml-research running probeScript.
func probeJob(jobspecs string) *api.Job {
	j := api.NewBatchJob("dev-probe", "dev-probe", "global", 50)
	j.Namespace = pointer("ml-research")
	task := api.NewTask("probe", "ckpt").
		SetConfig("command", "/bin/sh").
		SetConfig("args", []string{"-c", fmt.Sprintf(probeScript, jobspecs)}).
		Require(&api.Resources{CPU: pointer(100), MemoryMB: pointer(64),
			Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: pointer(uint64(1))}}})
	g := api.NewTaskGroup("g", 1).AddTask(task)
	g.RestartPolicy = &api.RestartPolicy{Attempts: pointer(0), Mode: pointer("fail")}
	g.ReschedulePolicy = &api.ReschedulePolicy{Attempts: pointer(0), Unlimited: pointer(false)}
	return j.AddTaskGroup(g)
}

func pointer[T any](v T) *T { return &v }

// runProbe submits the probe through the governor, waits for it to
// finish and returns its stdout.
func runProbe(t *testing.T, gov, nomad *api.Client, jobspecs string) string {
	t.Helper()
	_, _, err := gov.Jobs().Register(probeJob(jobspecs), nil)
	must.NoError(t, err)
	var alloc *api.AllocationListStub
	waitFor(t, 2*time.Minute, func() error {
		allocs, _, err := nomad.Jobs().Allocations("dev-probe", false, &api.QueryOptions{Namespace: "ml-research"})
		if err != nil || len(allocs) == 0 {
			return errors.Join(errors.New("no allocation yet"), err)
		}
		alloc = allocs[0]
		switch alloc.ClientStatus {
		case api.AllocClientStatusComplete, api.AllocClientStatusFailed:
			return nil
		}
		return fmt.Errorf("allocation %s", alloc.ClientStatus)
	})
	full, _, err := nomad.Allocations().Info(alloc.ID, nil)
	must.NoError(t, err)
	rc, err := nomad.AllocFS().Cat(full, "alloc/logs/probe.stdout.0", nil)
	must.NoError(t, err)
	defer rc.Close()
	out, err := io.ReadAll(rc)
	must.NoError(t, err)
	must.Eq(t, api.AllocClientStatusComplete, alloc.ClientStatus,
		must.Sprintf("probe failed; stdout:\n%s\nevents: %v", out, events(full)))
	return string(out)
}

func events(a *api.Allocation) []string {
	var out []string
	for _, st := range a.TaskStates {
		for _, e := range st.Events {
			out = append(out, e.Type+": "+e.DisplayMessage)
		}
	}
	return out
}

// checkProbe checks what the probe printed: as root, the task ran as
// nobody (never uid 0) and saw exactly one GPU node; otherwise as the
// user who ran the test. Either way the toy trainer ran and checkpointed.
func checkProbe(t *testing.T, out string) {
	t.Helper()
	uid := regexp.MustCompile(`uid=(\d+)`).FindStringSubmatch(out)
	must.SliceLen(t, 2, uid, must.Sprint(out))
	if os.Geteuid() == 0 {
		must.NotEq(t, "0", uid[1], must.Sprint("a dev task ran as root:\n"+out))
		must.Eq(t, "65534", uid[1], must.Sprint(out))
		gpus := regexp.MustCompile(`gpus=(.*)`).FindStringSubmatch(out)
		must.SliceLen(t, 2, gpus, must.Sprint(out))
		must.SliceLen(t, 1, strings.Fields(gpus[1]), must.Sprintf("GPU nodes the task sees: %q", gpus[1]))
	} else {
		must.Eq(t, strconv.Itoa(os.Getuid()), uid[1], must.Sprint(out))
	}
	must.StrContains(t, out, "latest=", must.Sprint(out))
	must.StrContains(t, out, filepath.Join("ml-research", "dev-probe"), must.Sprint(out))
}
