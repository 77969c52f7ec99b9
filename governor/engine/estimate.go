package engine

import (
	"math"
	"sort"
	"time"
)

// Estimator learns run times of finished jobs by key (a tenant and job
// name, or a tenant and shape) for jobs that set no allot.max-runtime:
// the estimate is a high percentile of the key's recent run times, so
// that a backfilled job rarely outlives it. Not safe for concurrent use.
type Estimator struct {
	// Window is how many recent run times a key keeps; Min how many it
	// needs before it estimates; Quantile the percentile it returns.
	Window, Min int
	Quantile    float64
	runs        map[string][]time.Duration
}

// NewEstimator returns an estimator of the 90th percentile of the last
// 50 run times, from 5 on.
func NewEstimator() *Estimator {
	return &Estimator{Window: 50, Min: 5, Quantile: 0.9, runs: map[string][]time.Duration{}}
}

// Observe records a finished run of key.
func (e *Estimator) Observe(key string, d time.Duration) {
	r := append(e.runs[key], d)
	if len(r) > e.Window {
		r = r[len(r)-e.Window:]
	}
	e.runs[key] = r
}

// Forget drops everything learned for key.
func (e *Estimator) Forget(key string) { delete(e.runs, key) }

// Estimate returns key's learned run time; zero until Min runs are known.
func (e *Estimator) Estimate(key string) time.Duration {
	r := e.runs[key]
	if len(r) < e.Min || len(r) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), r...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	// Nearest rank: the smallest run time at or above the quantile.
	i := int(math.Ceil(e.Quantile*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}
