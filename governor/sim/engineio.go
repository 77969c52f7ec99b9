package sim

import (
	"time"

	"github.com/allot-sh/allot/governor/engine"
)

// fillAlloc sets the allocation fields the engine reads that change over
// time (start and checkpoint times, once the engine has them).
func fillAlloc(a *alloc, now time.Duration) {}

// fillJob sets the job fields the engine reads about its history.
func fillJob(ej *engine.Job, j *jobRun, now time.Duration) {}
