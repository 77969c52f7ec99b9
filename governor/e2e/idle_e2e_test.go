//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/contract/ckptevent"
	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/governor/idle"
	"github.com/allot-sh/allot/governor/ledger"
	"github.com/allot-sh/allot/internal/testcluster"
)

const idleInventory = `
seed = %q
gpu "H200" {
  count      = 10
  memory_mib = 143771
}
`

// idleConfig scales the idle windows down: a 2 s period, a 10 s window,
// a 12 s grace and a 4 s notice: idle for 10 s → suspect; still idle 8 s
// later → warned; still idle at the end of the grace (suspect + 12 s) →
// checkpoint-stopped and requeued.
const idleConfig = `
cycle_interval = "1s"
backoff_base   = "1s"
backoff_cap    = "2s"
ledger { path = %q }
idle {
  period    = "2s"
  window    = "10s"
  grace     = "12s"
  notice    = "4s"
  threshold = 5
}
`

const (
	idlePeriod = 2 * time.Second
	idleGrace  = 12 * time.Second
	idleNotice = 4 * time.Second
	clockSlack = 50 * time.Millisecond
)

// telemetry scripts the inventory backend's stats: a device not set
// reports nothing (missing telemetry, never idle, never a zombie).
type telemetry struct {
	mu    sync.Mutex
	files map[string]string   // node name → telemetry file
	devs  map[string][]string // node name → device IDs
	set   map[string]map[string]any
}

func (tl *telemetry) write(t testing.TB) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for node, f := range tl.files {
		devices, missing := map[string]any{}, []string{}
		for _, id := range tl.devs[node] {
			if v, ok := tl.set[id]; ok {
				devices[id] = v
			} else {
				missing = append(missing, id)
			}
		}
		b, err := json.Marshal(map[string]any{"devices": devices, "missing": missing})
		must.NoError(t, err)
		tmp := f + ".tmp"
		must.NoError(t, os.WriteFile(tmp, b, 0o644))
		must.NoError(t, os.Rename(tmp, f))
	}
}

func (tl *telemetry) device(t testing.TB, id string, v map[string]any) {
	tl.mu.Lock()
	if v == nil {
		delete(tl.set, id)
	} else {
		tl.set[id] = v
	}
	tl.mu.Unlock()
	tl.write(t)
}

var (
	idleHeld = map[string]any{"utilization": 1, "memory_used_mib": 30000, "processes": 1}
	busy     = map[string]any{"utilization": 80, "memory_used_mib": 20000, "processes": 1}
)

// TestE2E_Idle: 20 one-GPU ckpt jobs: 10 busy, 5 idle-held, 3 idle then
// busy again inside the grace, 2 idle but exempt. Exactly the 5 are warned
// (ledger, metric, and a task event through the ckpt driver), then
// checkpoint-stopped at the end of the grace (± one period), requeued, and
// resume from their checkpoint; the 3 (idle for the whole window, busy
// again inside the grace before the notice) are never warned; the other 15
// are never touched. Then a zombie (memory and a process left on a device
// after its allocation stopped) is reported within two periods.
func TestE2E_Idle(t *testing.T) {
	start := time.Now()
	dir, root := t.TempDir(), t.TempDir()
	tl := &telemetry{files: map[string]string{}, devs: map[string][]string{}, set: map[string]map[string]any{}}
	var clients []testcluster.ClientSpec
	for _, name := range []string{"gpu-1", "gpu-2"} {
		p := filepath.Join(dir, name+".hcl")
		must.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(idleInventory, name)), 0o644))
		tl.files[name] = filepath.Join(dir, name+".telemetry.json")
		clients = append(clients, testcluster.ClientSpec{Name: name, NodePool: "gpu",
			PluginConfig: map[string]string{
				"nomad-device-accel": fmt.Sprintf("inventory_file = %q", p),
				"nomad-driver-ckpt":  fmt.Sprintf("checkpoint_root = %q\npoll_interval = \"100ms\"\nsaved_event_interval = \"1m\"\n%s", root, testcluster.CkptUnisolated),
			},
			Ready: testcluster.HasDevices("nvidia/gpu/H200", 10)})
	}
	c := testcluster.New(t, testcluster.Options{Plugins: []string{"nomad-device-accel", "nomad-driver-ckpt"}, Clients: clients})
	nomad, err := testcluster.NomadBinary()
	must.NoError(t, err)
	for _, name := range []string{"gpu-1", "gpu-2"} {
		for _, d := range c.Node(c.Client(name)).NodeResources.Devices {
			for _, in := range d.Instances {
				tl.devs[name] = append(tl.devs[name], in.ID)
			}
		}
	}
	tl.write(t)
	// saved_event_interval is 1m: Nomad keeps a task's last 10 events, and
	// periodic "Checkpoint saved" events every 2 s would push the idle
	// task events out before the test reads them.
	e := &env{t: t, c: c, nomad: nomad, dir: dir}
	e.namespace("ml", map[string]string{"allot.quota.gpu": "20", "allot.limit.gpu": "20",
		"allot.idle.exempt.j18": "until=2030-01-01T00:00:00Z;reason=e2e exemption",
		"allot.idle.exempt.j19": "until=2030-01-01T00:00:00Z;reason=e2e exemption"})
	cfg := filepath.Join(dir, "governor.hcl")
	must.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(idleConfig, filepath.Join(dir, "ledger.db"))), 0o644))
	e.g = c.StartGovernor("-config", cfg)
	e.gov = &allotapi.Client{Address: e.g.Addr}
	pe := &preemptEnv{env: e, trainer: testcluster.BuildToyTrainer(t, dir)}

	ids := make([]string, 20)
	for i := range ids {
		ids[i] = fmt.Sprintf("j%02d", i)
		pe.train("ml", ids[i], "standard", 1, 1, "-step-time", "100ms", "-save-every", "20")
	}
	first := map[string]*api.Allocation{}
	for _, id := range ids {
		a := pe.runningAllocs("ml", id, 1, 120*time.Second, nil)[0]
		full, _, err := c.API.Allocations().Info(a.ID, nil)
		must.NoError(t, err)
		first[id] = full
	}
	t.Logf("20 jobs running after %s", time.Since(start).Round(time.Second))
	dev := func(a *api.Allocation) string { return a.AllocatedResources.Tasks["train"].Devices[0].DeviceIDs[0] }

	for _, id := range ids[:10] {
		tl.set[dev(first[id])] = busy
	}
	idleStart := time.Now()
	for _, id := range ids[10:] {
		tl.set[dev(first[id])] = idleHeld
	}
	tl.write(t)
	// busyAgain scripts the devices of a reclaimed job's new allocation busy.
	resumed := map[string]bool{}
	busyAgain := func(id string) {
		for _, a := range pe.allocs("ml", id) {
			if a.ID == first[id].ID || resumed[id] || a.ClientStatus != api.AllocClientStatusRunning {
				continue
			}
			full, _, err := c.API.Allocations().Info(a.ID, nil)
			must.NoError(t, err)
			resumed[id] = true
			tl.device(t, dev(full), busy)
		}
	}

	// the 3 flip back to busy as soon as they are suspects (idle for the
	// whole window, inside the grace, before the warning)
	flipped := map[string]bool{}
	reclaimed := map[string]time.Time{}
	c.Eventually(90*time.Second, "5 idle-held jobs reclaimed", func() error {
		a, err := e.gov.Idle(context.Background())
		if err != nil {
			return err
		}
		for _, k := range a.Candidates {
			n, _ := strconv.Atoi(k.JobID[1:])
			if n >= 15 && n <= 17 && k.Step == "suspect" && !flipped[k.JobID] {
				flipped[k.JobID] = true
				tl.device(t, dev(first[k.JobID]), busy)
			}
			if n >= 10 && n <= 14 && k.Step == "reclaimed" && reclaimed[k.JobID].IsZero() {
				reclaimed[k.JobID] = time.Now()
			}
		}
		for _, id := range ids[10:15] {
			if n, _ := strconv.Atoi(e.job("ml", id).Meta["allot.requeues"]); reclaimed[id].IsZero() && n >= 1 {
				reclaimed[id] = time.Now()
			}
			if !reclaimed[id].IsZero() {
				busyAgain(id)
			}
		}
		if len(reclaimed) < 5 {
			return fmt.Errorf("reclaimed %v, flipped %v", reclaimed, flipped)
		}
		return nil
	})
	must.MapLen(t, 5, reclaimed, must.Sprintf("reclaimed: %v", reclaimed))
	must.MapLen(t, 3, flipped, must.Sprint("the 3 were seen as suspects (idle through the window)"))

	// the ledger has the ladder: warn+reclaim for exactly the 5, nothing
	// for the 3 (never warned) or anyone else
	var audit ledger.AuditAnswer
	getJSON(t, e.g.Addr+"/allot/v1/audit?kind=idle:&since="+idleStart.Add(-time.Minute).UTC().Format(time.RFC3339), &audit)
	byJob := map[string][]string{}
	at := map[string]map[string]time.Time{}
	detail := map[string]map[string]idle.Detail{}
	for _, en := range audit.Entries {
		if en.Kind == "idle:zombie" {
			continue
		}
		byJob[en.Subject] = append(byJob[en.Subject], en.Kind)
		if at[en.Subject] == nil {
			at[en.Subject], detail[en.Subject] = map[string]time.Time{}, map[string]idle.Detail{}
		}
		var d idle.Detail
		must.NoError(t, json.Unmarshal([]byte(en.Detail), &d))
		at[en.Subject][en.Kind], detail[en.Subject][en.Kind] = en.Time, d
	}
	want := map[string][]string{}
	for _, id := range ids[10:15] {
		want[id] = []string{"idle:warn", "idle:reclaim"}
	}
	must.Eq(t, want, byJob, must.Sprint("exactly j10..j14 warned, then reclaimed"))
	// warned at the notice before the end of the grace; stopped at the
	// end of the grace (± one period), never before the warning
	var latencies, stopDelay, stopVsDue []time.Duration
	for _, id := range ids[10:15] {
		r := detail[id]["idle:reclaim"]
		must.Eq(t, idleGrace, r.DueAt.Sub(r.SuspectAt), must.Sprintf("%s: grace runs from the suspect", id))
		// periods are stamped on the ticker's grid, so these are whole
		// periods apart; clockSlack absorbs the wall clock's drift from the
		// monotonic one between the stamps
		stop, warned := at[id]["idle:reclaim"].Sub(r.DueAt), at[id]["idle:warn"].Sub(r.DueAt)
		must.Between(t, -idlePeriod-clockSlack, stop, idlePeriod+clockSlack, must.Sprintf("%s stopped at the end of the grace ± one period", id))
		must.Between(t, -idleNotice-idlePeriod-clockSlack, warned, -idleNotice+idlePeriod+clockSlack, must.Sprintf("%s warned at the notice ± one period", id))
		must.Less(t, stop, warned, must.Sprintf("%s warned before the stop", id))
		latencies = append(latencies, at[id]["idle:warn"].Sub(idleStart))
		stopDelay = append(stopDelay, at[id]["idle:reclaim"].Sub(at[id]["idle:warn"]))
		stopVsDue = append(stopVsDue, stop)
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	t.Logf("detection latency (idle start → warning; window 10s + grace 12s − notice 4s = 18s by design): %v; warning → stop: %v; stop − end of grace: %v",
		latencies, stopDelay, stopVsDue)
	if b, err := os.ReadFile(e.g.LogPath); err == nil {
		t.Logf("governor log: idle periods took %s", periodDurations(string(b)))
	}

	// the warning is a task event on each of the 5 (through the ckpt
	// driver), and on no other allocation
	for _, id := range ids {
		a, _, err := c.API.Allocations().Info(first[id].ID, nil)
		must.NoError(t, err)
		var allot, signals []string
		for _, ev := range a.TaskStates["train"].Events {
			if strings.HasPrefix(ev.DisplayMessage, ckptevent.IdleMessage) {
				allot = append(allot, ev.DisplayMessage)
			}
			if ev.Type == api.TaskSignaling {
				signals = append(signals, ev.Details["signal"])
			}
		}
		if n, _ := strconv.Atoi(id[1:]); n < 10 || n > 14 {
			must.Less(t, 10, len(a.TaskStates["train"].Events), must.Sprintf("%s: Nomad keeps 10 events; fewer means none rotated out", id))
			must.SliceEmpty(t, allot, must.Sprintf("%s has no idle task event", id))
			must.SliceEmpty(t, signals, must.Sprintf("%s was sent no signal", id))
			continue
		}
		must.Len(t, 1, signals, must.Sprintf("%s: one pseudo-signal", id))
		must.StrHasPrefix(t, ckptevent.IdleWarning+";", signals[0])
		if id == "j10" {
			var lines []string
			for _, ev := range a.TaskStates["train"].Events {
				lines = append(lines, fmt.Sprintf("%s  %-10s %s", time.Unix(0, ev.Time).UTC().Format(time.RFC3339), ev.Type, ev.DisplayMessage))
			}
			t.Logf("j10's first allocation, task events (as nomad alloc status lists them, oldest first):\n%s", strings.Join(lines, "\n"))
		}
		r := detail[id]["idle:reclaim"]
		must.Eq(t, []string{fmt.Sprintf("Allot: accelerator idle since %s (idle-held); checkpoint-stop at %s unless busy",
			r.IdleSince.UTC().Format(time.RFC3339), r.DueAt.UTC().Format(time.RFC3339))}, allot, must.Sprint(id))
	}

	// the 5 resume from their checkpoint; the other 15 keep their first allocation
	for _, id := range ids[10:15] {
		old := first[id].ID
		var saved int
		c.Eventually(30*time.Second, id+" resumed on a busy device", func() error {
			busyAgain(id)
			if !resumed[id] {
				return fmt.Errorf("no new allocation yet")
			}
			return nil
		})
		c.Eventually(30*time.Second, id+" checkpointed on stop", func() error {
			m := regexp.MustCompile(`checkpointed step (\d+) on request`).FindStringSubmatch(c.TaskLogs(old, "train", "stdout"))
			if m == nil {
				return fmt.Errorf("no checkpoint on request in %s", old)
			}
			saved, _ = strconv.Atoi(m[1])
			return nil
		})
		na := pe.runningAllocs("ml", id, 1, 60*time.Second, map[string]bool{old: true})[0]
		var step int
		c.Eventually(30*time.Second, id+" resumed", func() error {
			m := startedStep.FindStringSubmatch(c.TaskLogs(na.ID, "train", "stdout"))
			if m == nil {
				return fmt.Errorf("no start line yet")
			}
			step, _ = strconv.Atoi(m[1])
			return nil
		})
		must.Positive(t, saved)
		must.Eq(t, saved, step, must.Sprintf("%s resumes from its checkpoint", id))
		must.Eq(t, "1", e.job("ml", id).Meta["allot.requeues"])
	}
	for _, id := range append(append([]string{}, ids[:10]...), ids[15:]...) {
		a, _, err := c.API.Allocations().Info(first[id].ID, nil)
		must.NoError(t, err)
		must.Eq(t, api.AllocClientStatusRunning, a.ClientStatus, must.Sprint(id))
		n, _ := strconv.Atoi(e.job("ml", id).Meta["allot.requeues"])
		must.Zero(t, n, must.Sprint(id))
	}
	must.StrContains(t, pe.metric(`allot_idle_events_total{class="idle-held",event="reclaim",namespace="ml"}`), " 5")
	must.StrContains(t, pe.metric(`allot_idle_events_total{class="idle-held",event="warn",namespace="ml"}`), " 5")
	ia, err := e.gov.Idle(context.Background())
	must.NoError(t, err)
	must.Len(t, 1, ia.Totals)
	tot := ia.Totals[0]
	must.Eq(t, [3]int{5, 5, 5}, [3]int{tot.Warnings, tot.Reclaims, tot.ReleasedDevices}, must.Sprintf("%+v", tot))
	must.Positive(t, tot.ReclaimedGPUHours)
	must.Eq(t, tot.IdleGPUHours, tot.ReclaimedGPUHours, must.Sprint("every warned allocation was reclaimed"))
	t.Logf("ledger totals: %+v", tot)

	// zombie: j00 stops, its device keeps memory and a process
	zdev := dev(first["j00"])
	tl.device(t, zdev, map[string]any{"utilization": 0, "memory_used_mib": 0, "processes": 0})
	_, _, err = c.API.Jobs().Deregister("j00", false, &api.WriteOptions{Namespace: "ml"})
	must.NoError(t, err)
	c.Eventually(60*time.Second, "j00 stopped", func() error {
		a, _, err := c.API.Allocations().Info(first["j00"].ID, nil)
		if err != nil || a.ClientStatus == api.AllocClientStatusRunning {
			return fmt.Errorf("still running")
		}
		return nil
	})
	injected := time.Now()
	tl.device(t, zdev, map[string]any{"utilization": 0, "memory_used_mib": 5000, "processes": 1})
	var seen time.Duration
	c.Eventually(30*time.Second, "zombie reported", func() error {
		a, err := e.gov.Idle(context.Background())
		if err != nil {
			return err
		}
		for _, z := range a.Zombies {
			if z.DeviceID == zdev {
				seen = time.Since(injected)
				return nil
			}
		}
		return fmt.Errorf("zombies %v", a.Zombies)
	})
	// reported at its second sample (the ledger entry's time is the
	// reporting period's stamp, its detail the first sample's), and within
	// two periods of the script change plus the 1–3 s the stats take to
	// reach Nomad's client stats API
	var za ledger.AuditAnswer
	getJSON(t, e.g.Addr+"/allot/v1/audit?kind=idle:zombie&since="+injected.Add(-time.Minute).UTC().Format(time.RFC3339), &za)
	var zd idle.Detail
	for _, en := range za.Entries {
		if strings.HasSuffix(en.Subject, "/"+zdev) {
			must.NoError(t, json.Unmarshal([]byte(en.Detail), &zd))
			must.Between(t, idlePeriod-clockSlack, en.Time.Sub(zd.IdleSince), idlePeriod+clockSlack, must.Sprint("reported at the second sample"))
		}
	}
	must.False(t, zd.IdleSince.IsZero(), must.Sprintf("no idle:zombie ledger entry for %s: %+v", zdev, za.Entries))
	t.Logf("zombie reported %s after injection (period 2s); whole test %s", seen.Round(100*time.Millisecond), time.Since(start).Round(time.Second))
	must.Less(t, 2*idlePeriod+3*time.Second, seen, must.Sprint("reported within two 2s periods (+ up to 3s for the stats to reach Nomad)"))
}

// periodDurations summarizes the governor's "idle detection period done"
// debug lines: how many periods, how many outlasted the period, the longest.
func periodDurations(log string) string {
	var n, slow int
	var longest time.Duration
	for _, m := range regexp.MustCompile(`idle detection period done: took=(\S+)`).FindAllStringSubmatch(log, -1) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			continue
		}
		n++
		if d > idlePeriod {
			slow++
		}
		if d > longest {
			longest = d
		}
	}
	return fmt.Sprintf("%d periods, %d longer than %s, longest %s", n, slow, idlePeriod, longest)
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	must.NoError(t, err)
	defer resp.Body.Close()
	must.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}
