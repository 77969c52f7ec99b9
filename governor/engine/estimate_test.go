package engine

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestEstimator(t *testing.T) {
	e := NewEstimator()
	for i := 1; i <= 4; i++ {
		e.Observe("t|1", time.Duration(i)*time.Minute)
	}
	must.Zero(t, e.Estimate("t|1")) // fewer than Min runs
	for i := 5; i <= 10; i++ {
		e.Observe("t|1", time.Duration(i)*time.Minute)
	}
	must.Eq(t, 9*time.Minute, e.Estimate("t|1")) // 90th percentile of 1..10
	must.Zero(t, e.Estimate("other"))
	for i := 0; i < 100; i++ {
		e.Observe("t|1", time.Hour)
	}
	must.Eq(t, time.Hour, e.Estimate("t|1")) // only the window counts
}
