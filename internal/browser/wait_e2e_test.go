//go:build e2e

package browser

import (
	"time"

	"github.com/shoenig/test/wait"
)

// waitFor polls cond every 50 ms for up to 10 s.
func waitFor(cond func() bool) *wait.Constraint {
	return wait.InitialSuccess(wait.BoolFunc(cond), wait.Timeout(10*time.Second), wait.Gap(50*time.Millisecond))
}
