package ledger

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestSegments(t *testing.T) {
	now := at(1000)
	cp := func(string) (time.Time, bool) { return at(300), true }
	cases := map[string]struct {
		alloc   *allocB
		want    int // segments
		model   string
		devices int64
		start   time.Time
		end     time.Time
		open    bool
		outcome string
		lost    time.Duration
	}{
		"not started": {alloc: mkAlloc("a", "ml", "j").devices("t", "H200", 2), want: 0},
		"running accrues to now": {alloc: mkAlloc("a", "ml", "j").task("t", 100, -1, false).devices("t", "H200", 2),
			want: 1, model: "nvidia/gpu/H200", devices: 2, start: at(100), end: now, open: true, outcome: OutcomeRunning},
		"complete": {alloc: mkAlloc("a", "ml", "j").task("t", 100, 400, false).devices("t", "H200", 1).status("complete", "run"),
			want: 1, model: "nvidia/gpu/H200", devices: 1, start: at(100), end: at(400), outcome: OutcomeComplete},
		"failed": {alloc: mkAlloc("a", "ml", "j").task("t", 100, 150, true).devices("t", "L4", 1).status("failed", "run"),
			want: 1, model: "nvidia/gpu/L4", devices: 1, start: at(100), end: at(150), outcome: OutcomeFailed},
		"stopped loses work since checkpoint": {alloc: mkAlloc("a", "ml", "j").task("t", 100, 500, false).
			devices("t", "L4", 1).status("complete", "stop").killed(),
			want: 1, model: "nvidia/gpu/L4", devices: 1, start: at(100), end: at(500), outcome: OutcomeStopped, lost: 200 * time.Second},
		"preempted": {alloc: mkAlloc("a", "ml", "j").task("t", 100, 500, false).devices("t", "L4", 1).
			status("complete", "evict").preemptedBy("p1"),
			want: 1, model: "nvidia/gpu/L4", devices: 1, start: at(100), end: at(500), outcome: OutcomePreempted, lost: 200 * time.Second},
		"two tasks span first start to last finish": {alloc: mkAlloc("a", "ml", "j").task("t", 100, 200, false).
			task("u", 150, 300, false).devices("t", "H200", 1).devices("u", "H200", 2).status("complete", "run"),
			want: 1, model: "nvidia/gpu/H200", devices: 3, start: at(100), end: at(300), outcome: OutcomeComplete},
		"no devices": {alloc: mkAlloc("a", "ml", "j").task("t", 100, 200, false).status("complete", "run"),
			want: 1, model: "", devices: 0, start: at(100), end: at(200), outcome: OutcomeComplete},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			segs := Segments(tc.alloc.build(), Context{Checkpoint: cp}, now)
			must.Len(t, tc.want, segs)
			if tc.want == 0 {
				return
			}
			s := segs[0]
			must.Eq(t, tc.model, s.Model)
			must.Eq(t, tc.devices, s.Devices)
			must.Eq(t, tc.start, s.Start)
			must.Eq(t, tc.end, s.End)
			must.Eq(t, tc.open, s.Open)
			must.Eq(t, tc.outcome, s.Outcome)
			must.Eq(t, tc.lost, s.LostWork)
		})
	}
}

// TestSegmentsRequeuedByGovernor: a stop the governor's requeue caused
// while the allocation ran is a preemption; an older requeue is not.
func TestSegmentsRequeuedByGovernor(t *testing.T) {
	stopped := mkAlloc("a", "ml", "j").task("t", 100, 500, false).devices("t", "L4", 1).status("complete", "stop").killed().build()
	for name, tc := range map[string]struct {
		at   time.Time
		want string
	}{"during the run": {at(499), OutcomePreempted}, "before the run": {at(50), OutcomeStopped}} {
		t.Run(name, func(t *testing.T) {
			c := Context{Requeued: func(string, string) (time.Time, string) { return tc.at, "ref1" }}
			must.Eq(t, tc.want, Segments(stopped, c, at(600))[0].Outcome)
		})
	}
}

func TestSegmentsTwoModelsCountCPUOnce(t *testing.T) {
	a := mkAlloc("a", "ml", "j").task("t", 0, 100, false).devices("t", "H200", 1).devices("t", "L4", 2).
		status("complete", "run").build()
	segs := Segments(a, Context{NodePool: func(string) string { return "gpu" }}, at(200))
	must.Len(t, 2, segs)
	must.Eq(t, "nvidia/gpu/H200", segs[0].Model)
	must.Eq(t, "nvidia/gpu/L4", segs[1].Model)
	must.Eq(t, int64(1000), segs[0].CPUMHz+segs[1].CPUMHz)
	must.Eq(t, "gpu", segs[1].NodePool)
	must.Eq(t, 100.0, segs[0].DeviceSeconds())
	must.Eq(t, 200.0, segs[1].DeviceSeconds())
}
