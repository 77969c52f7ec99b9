package trainer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestRunSavesAndResumes(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	must.NoError(t, Run(Options{Steps: 6, StepTime: time.Millisecond, SaveEvery: 3}, Env{Dir: dir}, &out))
	must.StrContains(t, out.String(), "checkpointed step 6")
	latest, err := os.ReadFile(filepath.Join(dir, "LATEST"))
	must.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(latest)), "\n")
	must.Eq(t, []string{filepath.Join(dir, "step-00000006.ckpt"), "6"}, lines)

	out.Reset()
	must.NoError(t, Run(Options{Steps: 8, StepTime: time.Millisecond}, Env{Dir: dir, ResumeFrom: lines[0]}, &out))
	must.StrContains(t, out.String(), "starting at step 6")
	must.StrContains(t, out.String(), "done at step 8")
}

func TestRunRejectsBadInput(t *testing.T) {
	must.Error(t, Run(Options{Steps: 1}, Env{}, &bytes.Buffer{}))
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.ckpt")
	must.NoError(t, os.WriteFile(bad, []byte("nope"), 0o600))
	must.Error(t, Run(Options{Steps: 1}, Env{Dir: dir, ResumeFrom: bad}, &bytes.Buffer{}))
}
