package ckpt

import (
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

const testPoll = 100 * time.Millisecond

// stopCase builds one stop-protocol scenario.
type stopCase struct {
	plan      stopPlan
	reactions map[syscall.Signal]func(*fakeProc)
	baseline  int64 // step of a LATEST that exists before the stop; 0: none
	gone      bool  // the process exited before the stop
}

func scenario() *stopCase {
	return &stopCase{
		plan: stopPlan{
			checkpointSignal: syscall.SIGUSR1, signalName: "SIGUSR1", checkpointTimeout: 3 * time.Second,
			killSignal: syscall.SIGINT, killTimeout: 5 * time.Second, poll: testPoll, forceWait: 15 * time.Second,
		},
		reactions: map[syscall.Signal]func(*fakeProc){},
	}
}

func (c *stopCase) timeouts(ckpt, kill time.Duration) *stopCase {
	c.plan.checkpointTimeout, c.plan.killTimeout = ckpt, kill
	return c
}

func (c *stopCase) on(sig syscall.Signal, fn func(*fakeProc)) *stopCase {
	c.reactions[sig] = fn
	return c
}

func (c *stopCase) withBaseline(step int64) *stopCase { c.baseline = step; return c }
func (c *stopCase) exitedBefore() *stopCase           { c.gone = true; return c }

// stopRun is what one run produced.
type stopRun struct {
	out     stopOutcome
	events  []event
	signals []sigAt
	took    time.Duration
}

// run executes the scenario, advancing the fake clock by one poll interval
// each time the stopper arms a timer, until the stopper finishes.
func (c *stopCase) run(t *testing.T) stopRun {
	t.Helper()
	clock := newFakeClock()
	proc := newFakeProc(clock)
	proc.onSignal = c.reactions
	proc.onSignal[syscall.SIGKILL] = func(p *fakeProc) { p.exit() }
	if c.baseline > 0 {
		proc.writeLatest(c.baseline)
	}
	if c.gone {
		proc.exit()
	}
	var mu sync.Mutex
	var events []event
	s := &stopper{plan: c.plan, proc: proc, clock: clock, readLast: proc.readLatest,
		emit: func(e event) { mu.Lock(); events = append(events, e); mu.Unlock() }}
	if l, err := proc.readLatest(); err == nil {
		s.baseline = &l
	}
	start := clock.Now()
	done := make(chan stopOutcome, 1)
	go func() { done <- s.run() }()
	deadline := time.After(10 * time.Second) // real-time guard against a hung machine
	for {
		select {
		case out := <-done:
			mu.Lock()
			defer mu.Unlock()
			return stopRun{out: out, events: events, signals: proc.signals(), took: clock.Now().Sub(start)}
		case <-clock.armed:
			clock.Advance(testPoll)
		case <-deadline:
			t.Fatalf("stop protocol did not finish; signals so far %v", proc.signals())
		}
	}
}

func sigs(run stopRun) []syscall.Signal {
	var out []syscall.Signal
	for _, s := range run.signals {
		out = append(out, s.sig)
	}
	return out
}

func messages(run stopRun) []string {
	var out []string
	for _, e := range run.events {
		out = append(out, e.msg)
	}
	return out
}

func TestStopProtocol(t *testing.T) {
	cases := map[string]struct {
		scenario    *stopCase
		wantSignals []syscall.Signal
		wantMsgs    []string // prefixes, in order
		check       func(t *testing.T, run stopRun)
	}{
		"checkpoint saved, then exits on kill_signal": {
			scenario: scenario().
				on(syscall.SIGUSR1, saveAfter(time.Second, 7)).
				on(syscall.SIGINT, exitAfter(200*time.Millisecond)),
			wantSignals: []syscall.Signal{syscall.SIGUSR1, syscall.SIGINT},
			wantMsgs:    []string{"Checkpoint requested", "Checkpoint saved: /ckpt/step-7ns step 7 ("},
			check: func(t *testing.T, run stopRun) {
				must.True(t, run.out.Saved)
				must.False(t, run.out.TimedOut)
				must.False(t, run.out.Killed)
				must.Eq(t, "7", run.events[1].ann[AnnStep])
				must.Eq(t, triggerRequested, run.events[1].ann[AnnTrigger])
				must.Between(t, time.Second, run.signals[1].at, 1500*time.Millisecond)
			},
		},
		"task saves and exits on the checkpoint signal": {
			scenario:    scenario().on(syscall.SIGUSR1, saveAndExitAfter(2*time.Second, 12)),
			wantSignals: []syscall.Signal{syscall.SIGUSR1},
			wantMsgs:    []string{"Checkpoint requested", "Checkpoint saved: /ckpt/step-12ns step 12"},
			check: func(t *testing.T, run stopRun) {
				must.True(t, run.out.Saved)
				must.False(t, run.out.KillSignalSent)
			},
		},
		"task ignores every signal: timed out, kill_signal, SIGKILL at kill_timeout": {
			scenario:    scenario().timeouts(3*time.Second, 5*time.Second),
			wantSignals: []syscall.Signal{syscall.SIGUSR1, syscall.SIGINT, syscall.SIGKILL},
			wantMsgs:    []string{"Checkpoint requested", "Checkpoint timed out after 3"},
			check: func(t *testing.T, run stopRun) {
				must.True(t, run.out.TimedOut)
				must.True(t, run.out.Killed)
				must.Between(t, 3*time.Second, run.signals[1].at, 3300*time.Millisecond)
				must.Between(t, 5*time.Second, run.signals[2].at, 5300*time.Millisecond)
			},
		},
		"task ignores the checkpoint signal but obeys kill_signal": {
			scenario:    scenario().on(syscall.SIGINT, exitAfter(100*time.Millisecond)),
			wantSignals: []syscall.Signal{syscall.SIGUSR1, syscall.SIGINT},
			wantMsgs:    []string{"Checkpoint requested", "Checkpoint timed out after"},
			check: func(t *testing.T, run stopRun) {
				must.True(t, run.out.TimedOut)
				must.False(t, run.out.Killed)
			},
		},
		"checkpoint timeout not below kill_timeout: warned and shortened": {
			scenario:    scenario().timeouts(10*time.Second, 5*time.Second),
			wantSignals: []syscall.Signal{syscall.SIGUSR1, syscall.SIGINT, syscall.SIGKILL},
			wantMsgs:    []string{"Checkpoint warning: checkpoint timeout 10s is not below the kill_timeout 5s", "Checkpoint requested", "Checkpoint timed out after "},
			check: func(t *testing.T, run stopRun) {
				// The wait is shortened to leave the kill signal part of
				// kill_timeout; the fake clock advances in poll steps, so
				// the exact moment varies within one step or two.
				must.Between(t, 4500*time.Millisecond, run.signals[1].at, 4800*time.Millisecond)
				waited, err := time.ParseDuration(strings.TrimPrefix(messages(run)[2], "Checkpoint timed out after "))
				must.NoError(t, err)
				must.Between(t, 4500*time.Millisecond, waited, 4800*time.Millisecond)
			},
		},
		"task exits on the signal without a checkpoint": {
			scenario:    scenario().on(syscall.SIGUSR1, exitAfter(time.Second)),
			wantSignals: []syscall.Signal{syscall.SIGUSR1},
			wantMsgs:    []string{"Checkpoint requested", "Checkpoint not saved: task exited after 1"},
		},
		"an unchanged old LATEST is not a new checkpoint": {
			scenario: scenario().withBaseline(3).
				on(syscall.SIGINT, exitAfter(0)),
			wantSignals: []syscall.Signal{syscall.SIGUSR1, syscall.SIGINT},
			wantMsgs:    []string{"Checkpoint requested", "Checkpoint timed out"},
		},
		"a task that already exited gets no signal": {
			scenario: scenario().exitedBefore(),
			wantMsgs: []string{"Checkpoint requested"},
			check: func(t *testing.T, run stopRun) {
				must.False(t, run.out.Killed)
				must.Less(t, time.Second, run.took)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			run := tc.scenario.run(t)
			must.Eq(t, tc.wantSignals, sigs(run))
			msgs := messages(run)
			must.SliceLen(t, len(tc.wantMsgs), msgs, must.Sprintf("events: %q", msgs))
			for i, want := range tc.wantMsgs {
				must.True(t, strings.HasPrefix(msgs[i], want), must.Sprintf("event %d: %q does not start with %q", i, msgs[i], want))
			}
			if tc.check != nil {
				tc.check(t, run)
			}
		})
	}
}

func TestStopPlanCheckpointWait(t *testing.T) {
	cases := map[string]struct {
		ckpt, kill, want time.Duration
		warn             bool
	}{
		"below kill_timeout":    {ckpt: 2 * time.Minute, kill: 150 * time.Second, want: 2 * time.Minute},
		"equal to kill_timeout": {ckpt: 10 * time.Second, kill: 10 * time.Second, want: 9 * time.Second, warn: true},
		"above kill_timeout":    {ckpt: time.Minute, kill: 30 * time.Second, want: 27 * time.Second, warn: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, warn := stopPlan{checkpointTimeout: tc.ckpt, killTimeout: tc.kill}.checkpointWait()
			must.Eq(t, tc.want, got)
			must.Eq(t, tc.warn, warn)
		})
	}
}
