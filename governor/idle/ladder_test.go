package idle

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const period = 10 * time.Second

func testPolicy() Policy {
	return Policy{Window: 5 * period, ThresholdPct: 5, MemoryMiB: 1024, Grace: 4 * period, Notice: 2 * period, Action: ActionCheckpoint}
}

// series builds samples one period apart from a script: B busy, I idle with
// memory held, i idle without memory, _ missing.
func series(script string) []Sample {
	out := make([]Sample, 0, len(script))
	for n, c := range script {
		s := Sample{At: t0.Add(time.Duration(n) * period), Known: c != '_'}
		switch c {
		case 'B':
			s.UtilPct, s.MemoryMiB = 80, 30000
		case 'I':
			s.UtilPct, s.MemoryMiB = 1, 30000
		case 'i':
			s.UtilPct, s.MemoryMiB = 0, 10
		}
		out = append(out, s)
	}
	return out
}

func TestLadder(t *testing.T) {
	cases := map[string]struct {
		script     string
		policy     func(*Policy)
		exempt     *Exemption
		exemptFrom int // the exemption is granted at this sample (0: from the start)
		production bool
		ungoverned bool
		// want: transitions by sample index
		want  map[int]Transition
		class string
		step  Step
	}{
		"busy never warned": {script: "BBBBBBBBBBBB", want: map[int]Transition{}, step: StepObserve},
		// window 5 → suspect at 5 (due 9), warned at 9−2 = 7, reclaimed at 9
		"idle-held suspect, warned, reclaimed": {script: "IIIIIIIIIII", want: map[int]Transition{5: Suspect, 7: Warn, 9: Reclaim, 10: Reclaim}, class: ClassIdleHeld, step: StepReclaim},
		"truly idle":                           {script: "iiiiiiii", want: map[int]Transition{5: Suspect, 7: Warn}, class: ClassIdle, step: StepWarned},
		"busy inside the grace before the warning: never warned": {script: "IIIIIIBBB", want: map[int]Transition{5: Suspect}, step: StepObserve},
		"busy after the warning withdraws it":                    {script: "IIIIIIIIBB", want: map[int]Transition{5: Suspect, 7: Warn, 8: Cancel}, step: StepObserve},
		"busy in the reclaim period withdraws it":                {script: "IIIIIIIIIB", want: map[int]Transition{5: Suspect, 7: Warn, 9: Cancel}, step: StepObserve},
		"gap restarts the window":                                {script: "IIII_IIIII", want: map[int]Transition{}, class: ClassIdleHeld, step: StepObserve},
		"gap while suspect starts over":                          {script: "IIIIII_IIIIIII", want: map[int]Transition{5: Suspect, 12: Suspect}, class: ClassIdleHeld, step: StepSuspect},
		// gap at 8: the grace restarts at 9, due 13
		"gap after warning restarts grace": {script: "IIIIIIII_IIIIII", want: map[int]Transition{5: Suspect, 7: Warn, 13: Reclaim, 14: Reclaim}, class: ClassIdleHeld, step: StepReclaim},
		// reclaim not carried out yet (another allocation of the job is
		// not due) and a gap at 10: warned again from 11, due 15
		"gap while due restarts grace": {script: "IIIIIIIIII_IIIII", want: map[int]Transition{5: Suspect, 7: Warn, 9: Reclaim, 15: Reclaim}, class: ClassIdleHeld, step: StepReclaim},
		"notice not shorter than the grace: warned at once": {script: "IIIIIIIIII", policy: func(p *Policy) { p.Notice = 10 * period },
			want: map[int]Transition{5: Warn, 9: Reclaim}, class: ClassIdleHeld, step: StepReclaim},
		"no grace: stopped the period after the warning": {script: "IIIIIIII", policy: func(p *Policy) { p.Grace, p.Notice = 0, period },
			want: map[int]Transition{5: Warn, 6: Reclaim, 7: Reclaim}, class: ClassIdleHeld, step: StepReclaim},
		// notice shorter than a period: the warning falls on the due
		// period, the stop on the next one, never both at once
		"notice under a period: warn first": {script: "IIIIIIIIIII", policy: func(p *Policy) { p.Notice = time.Second },
			want: map[int]Transition{5: Suspect, 9: Warn, 10: Reclaim}, class: ClassIdleHeld, step: StepReclaim},
		"warn-only action":       {script: "IIIIIIIIIIII", policy: func(p *Policy) { p.Action = ActionWarn }, want: map[int]Transition{5: Suspect, 7: Warn}, step: StepWarned, class: ClassIdleHeld},
		"production only warned": {script: "IIIIIIIIIIII", production: true, want: map[int]Transition{5: Suspect, 7: Warn}, step: StepWarned, class: ClassIdleHeld},
		"ungoverned only warned": {script: "IIIIIIIIIIII", ungoverned: true, want: map[int]Transition{5: Suspect, 7: Warn}, step: StepWarned, class: ClassIdleHeld},
		"exempt":                 {script: "IIIIIIIIIIII", exempt: &Exemption{Until: t0.Add(time.Hour), Reason: "demo"}, want: map[int]Transition{}, step: StepExempt, class: ClassIdleHeld},
		"exempted after the warning: withdrawn": {script: "IIIIIIIIIII", exempt: &Exemption{Until: t0.Add(time.Hour), Reason: "demo"}, exemptFrom: 8,
			want: map[int]Transition{5: Suspect, 7: Warn, 8: Cancel}, step: StepExempt, class: ClassIdleHeld},
		"exempted while suspect: nothing to withdraw": {script: "IIIIIIIIIII", exempt: &Exemption{Until: t0.Add(time.Hour), Reason: "demo"}, exemptFrom: 6,
			want: map[int]Transition{5: Suspect}, step: StepExempt, class: ClassIdleHeld},
		"expired exemption": {script: "IIIIIIII", exempt: &Exemption{Until: t0.Add(2 * period), Reason: "demo"}, want: map[int]Transition{5: Suspect, 7: Warn}, step: StepWarned, class: ClassIdleHeld},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := testPolicy()
			if tc.policy != nil {
				tc.policy(&p)
			}
			tr := &tracker{c: Candidate{Watch: Watch{AllocID: "a", Devices: 2, Production: tc.production, Ungoverned: tc.ungoverned}, Step: StepObserve}}
			got := map[int]Transition{}
			for n, s := range series(tc.script) {
				ex := tc.exempt
				if n < tc.exemptFrom {
					ex = nil
				}
				if k := tr.observe(s, p, ex); k != None {
					got[n] = k
				}
			}
			must.Eq(t, tc.want, got)
			must.Eq(t, tc.step, tr.c.Step)
			must.Eq(t, tc.class, tr.c.Class)
		})
	}
}

func TestIdleDeviceSeconds(t *testing.T) {
	tr := &tracker{c: Candidate{Watch: Watch{Devices: 2}, Step: StepObserve}}
	for _, s := range series("IIIB_II") {
		tr.observe(s, testPolicy(), nil)
	}
	// two idle intervals in the first run, one in the second: 3 × 10 s × 2
	must.Eq(t, 60.0, tr.c.IdleDeviceSeconds)
}

func TestDetectorForgetsAndReclaims(t *testing.T) {
	d := NewDetector()
	ten := func(string) Tenant { return Tenant{Policy: testPolicy()} }
	w := Watch{AllocID: "a1", Namespace: "ml", JobID: "train", Devices: 1}
	var events []Event
	for _, s := range series("IIIIIIIIII") {
		events = append(events, d.Tick([]Observation{{Watch: w, Sample: s}}, ten)...)
	}
	must.Len(t, 3, events)
	must.Eq(t, []Transition{Suspect, Warn, Reclaim}, []Transition{events[0].Kind, events[1].Kind, events[2].Kind})
	warned := events[1].Candidate
	must.Eq(t, 7*period, warned.Latency(), must.Sprint("window 5 + grace 4 − notice 2"))
	must.Eq(t, t0.Add(5*period), warned.SuspectAt)
	must.Eq(t, t0.Add(9*period), warned.DueAt)
	must.Eq(t, t0.Add(7*period), warned.WarnAt)
	d.Reclaimed("a1")
	must.Len(t, 0, d.Tick([]Observation{{Watch: w, Sample: series("IIIIIIIIIII")[10]}}, ten))
	must.Eq(t, StepReclaimed, d.Candidates()[0].Step)
	d.Tick(nil, ten)
	must.Eq(t, 0, d.Watched())
}

func TestZombies(t *testing.T) {
	d := NewDetector()
	liveSet := map[string]bool{"gpu-1": true}
	live := func(_, dev string) bool { return liveSet[dev] }
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * period) }
	tick := func(n int, devs ...DeviceSample) []Zombie {
		for i := range devs {
			devs[i].At, devs[i].Known, devs[i].Node = at(n), true, "n1"
		}
		return d.Zombies(devs, live, 256)
	}
	must.Len(t, 0, tick(0, DeviceSample{DeviceID: "gpu-1", MemoryMiB: 9000}, DeviceSample{DeviceID: "gpu-2", MemoryMiB: 100}))
	// gpu-1's allocation stops; memory and a process stay
	liveSet["gpu-1"] = false
	must.Len(t, 0, tick(1, DeviceSample{DeviceID: "gpu-1", MemoryMiB: 9000, Processes: 1}))
	z := tick(2, DeviceSample{DeviceID: "gpu-1", MemoryMiB: 9000, Processes: 1})
	must.Len(t, 1, z)
	must.Eq(t, "gpu-1", z[0].DeviceID)
	must.Eq(t, at(1), z[0].Since)
	must.Len(t, 0, tick(3, DeviceSample{DeviceID: "gpu-1", MemoryMiB: 9000, Processes: 1}))
	must.Len(t, 1, d.ZombieList())
	tick(4, DeviceSample{DeviceID: "gpu-1"})
	must.Len(t, 0, d.ZombieList())
}

func TestUnclaimed(t *testing.T) {
	p := testPolicy()
	p.UnclaimedTTL = 4 * period
	cases := map[string]struct {
		service bool
		ownerAt int // sample index at which the owner resubmits (-1: never)
		exempt  *Exemption
		want    map[int]Transition
		step    Step
		class   string
	}{
		// busy all along: unclaimed at sample 4 (TTL from t0) and warned at
		// once, reclaimed after the grace (4 periods)
		"busy service past its TTL": {service: true, ownerAt: -1, want: map[int]Transition{4: Warn, 8: Reclaim, 9: Reclaim}, step: StepReclaim, class: ClassUnclaimed},
		"batch job never unclaimed": {ownerAt: -1, want: map[int]Transition{}, step: StepObserve},
		"owner resubmits in grace":  {service: true, ownerAt: 6, want: map[int]Transition{4: Warn, 6: Cancel}, step: StepObserve},
		"exempt":                    {service: true, ownerAt: -1, exempt: &Exemption{Until: t0.Add(time.Hour), Reason: "x"}, want: map[int]Transition{}, step: StepExempt, class: ClassUnclaimed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := &tracker{c: Candidate{Watch: Watch{AllocID: "a", Devices: 1, Service: tc.service, LastOwnerAction: t0}, Step: StepObserve}}
			got := map[int]Transition{}
			for n, s := range series("BBBBBBBBBB") {
				if n == tc.ownerAt {
					tr.c.LastOwnerAction = s.At
				}
				if k := tr.observe(s, p, tc.exempt); k != None {
					got[n] = k
				}
			}
			must.Eq(t, tc.want, got)
			must.Eq(t, tc.step, tr.c.Step)
			must.Eq(t, tc.class, tr.c.Class)
		})
	}
}
