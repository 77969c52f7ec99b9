package proc

import (
	"os"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestCPUTimeAndRSSOfThisProcess(t *testing.T) {
	before, err := CPUTime(os.Getpid())
	must.NoError(t, err)
	// Burn some CPU so the counter must move (a tick is 10ms).
	deadline := time.Now().Add(200 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	after, err := CPUTime(os.Getpid())
	must.NoError(t, err)
	must.Greater(t, before, after)

	rss, err := RSSMiB(os.Getpid())
	must.NoError(t, err)
	must.Positive(t, rss)
}

func TestCPUTimeOfAMissingProcess(t *testing.T) {
	_, err := CPUTime(1 << 30)
	must.Error(t, err)
}
