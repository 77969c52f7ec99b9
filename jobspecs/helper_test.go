package jobspecs

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestCheckpointHelper runs the Python tests of allot_checkpoint.py and
// toy_train.py (test_allot_checkpoint.py): a stop is answered only by a
// save that began after the signal.
func TestCheckpointHelper(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("SKIPPED LOUDLY: python3 is not on PATH; the checkpoint helper's tests did not run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "unittest", "-v", "test_allot_checkpoint")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprintf("python3 -m unittest test_allot_checkpoint:\n%s", out))
	t.Logf("%s", out)
}
