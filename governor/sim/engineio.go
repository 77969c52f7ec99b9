package sim

import (
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/engine"
)

// fillAlloc sets what the engine reads about an allocation's progress:
// it was created when placed and runs StartDelay later, and its latest
// checkpoint is the latest multiple of the job's checkpoint interval
// reached while every allocation ran (zero when none since the
// allocation started).
func fillAlloc(a *alloc, now, startDelay time.Duration) {
	j := a.job
	a.eng.Started = now >= a.start+startDelay
	a.eng.StartedAt = epoch.Add(a.start)
	a.eng.LastCheckpoint = time.Time{}
	c := j.w.Checkpoint
	if c <= 0 || !j.running {
		return
	}
	p := j.progress + (now - j.runningSince)
	if k := p / c * c; k > j.progress {
		a.eng.LastCheckpoint = epoch.Add(j.runningSince + (k - j.progress))
	}
}

// fillJob sets the job meta the governor writes (admitted-at, requeues,
// requeued-at, preempted-by) and allot.gang.
func fillJob(ej *engine.Job, j *jobRun, _ time.Duration) {
	if j.admitted {
		ej.AdmittedAt = epoch.Add(j.admittedAt)
	}
	ej.Requeues = j.requeues
	if j.requeues > 0 {
		ej.RequeuedAt = epoch.Add(j.requeuedAt)
	}
	ej.PreemptedBy = strings.Join(j.preemptedBy, " ")
	ej.NoGang = !j.w.Gang
}

// backoff is how long a job requeued n times waits before the engine
// admits it again (engine.Config BackoffBase·2^(n−1), at most BackoffCap).
func backoff(cfg engine.Config, n int) time.Duration {
	if cfg.BackoffBase <= 0 || n < 1 {
		return 0
	}
	d := cfg.BackoffBase
	for i := 1; i < n && d < cfg.BackoffCap; i++ {
		d *= 2
	}
	if cfg.BackoffCap > 0 && d > cfg.BackoffCap {
		d = cfg.BackoffCap
	}
	return d
}
