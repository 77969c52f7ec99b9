package engine

import "time"

// RuntimeOf is the run time the engine assumes for j under c: j's
// allot.max-runtime, else its Estimate, else what c.Runtimes learned for
// it; zero when unknown.
func (c Config) RuntimeOf(j *Job) time.Duration {
	if rt := RuntimeOf(j); rt > 0 || c.Runtimes == nil {
		return rt
	}
	if rt := c.Runtimes(j); rt > 0 {
		return rt
	}
	return 0
}
