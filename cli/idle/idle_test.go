package idle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/cli/app"
	"github.com/allot-sh/allot/governor/allotapi"
)

func fakeGovernor(t *testing.T, a allotapi.IdleAnswer) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/allot/v1/idle", func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(a) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func run(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := app.Run(context.Background(), append([]string{"allotctl"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestIdleCommand(t *testing.T) {
	since := time.Now().Add(-time.Hour)
	a := allotapi.IdleAnswer{
		Candidates: []allotapi.IdleCandidate{
			{Namespace: "ml", JobID: "train", AllocID: "0123456789", Devices: 2, Class: "idle-held", Step: "warned",
				IdleSince: since, DueAt: time.Now().Add(10 * time.Minute), Action: "checkpoint",
				Samples: []allotapi.IdleSample{{Known: true, UtilPct: 1, MemoryMiB: 30000}, {}}},
			{Namespace: "ml", JobID: "eval", AllocID: "9876543210", Devices: 1, Class: "idle", Step: "suspect", IdleSince: since,
				WarnAt: time.Now().Add(5*time.Minute + 30*time.Second), DueAt: time.Now().Add(20*time.Minute + 30*time.Second), Action: "checkpoint"},
			{Namespace: "web", JobID: "nb", AllocID: "a", Devices: 1, Class: "idle", Step: "exempt", IdleSince: since,
				Exemption: &allotapi.IdleExemption{Until: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Reason: "demo"}},
		},
		Zombies:  []allotapi.IdleZombie{{Node: "n1", DeviceID: "GPU-1", MemoryMiB: 900, Processes: 1, Since: since}},
		Policies: []allotapi.IdlePolicy{{Namespace: "ml", Problems: []string{`allot.idle.window="x": not a duration`}}},
		Totals:   []allotapi.IdleTotals{{Namespace: "ml", Warnings: 2, Reclaims: 1, ReleasedDevices: 2, IdleGPUHours: 2.5, ReclaimedGPUHours: 2}},
	}
	addr := fakeGovernor(t, a)
	code, out, errOut := run("idle", "-address", addr)
	must.Zero(t, code, must.Sprint(errOut))
	must.StrContains(t, out, "ml         train  01234567  idle-held  warned   1h0m0s")
	must.StrContains(t, out, "checkpoint in ")
	must.StrContains(t, out, "eval   98765432  idle       suspect  1h0m0s    warning in 5m30s, checkpoint in 20m")
	must.StrContains(t, out, "Last samples (util pct/MiB)")
	must.StrContains(t, out, "1/30000 ?")
	must.StrContains(t, out, "until 2030-01-01T00:00:00Z: demo")
	must.StrContains(t, out, "GPU-1")
	must.StrContains(t, out, "ml         2         1         2                 2.500       2.000")
	must.StrContains(t, errOut, "namespace ml: refused allot.idle.window")

	code, out, _ = run("idle", "-address", addr, "-namespace", "web", "-json")
	must.Zero(t, code)
	var got allotapi.IdleAnswer
	must.NoError(t, json.Unmarshal([]byte(out), &got))
	must.Len(t, 1, got.Candidates)
	must.Eq(t, "nb", got.Candidates[0].JobID)
}

func TestExemptNeedsArguments(t *testing.T) {
	code, _, errOut := run("idle", "exempt", "-until", "1h", "-reason", "x")
	must.NotEq(t, 0, code)
	must.StrContains(t, errOut, "want one job ID")
}
