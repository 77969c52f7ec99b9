package config

import (
	"io"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestIdleBlock(t *testing.T) {
	p := writeFile(t, `
idle {
  period    = "2s"
  window    = "10s"
  grace     = "6s"
  notice    = "4s"
  threshold = 3
  action    = "warn"
  unclaimed_ttl = "72h"
  warn_only_classes = ["prod"]
}`)
	c, err := Load([]string{"-config", p}, noEnv, io.Discard)
	must.NoError(t, err)
	must.True(t, c.Idle.Enabled)
	must.Eq(t, 2*time.Second, c.Idle.Period)
	must.Eq(t, 10*time.Second, c.Idle.Window)
	must.Eq(t, 6*time.Second, c.Idle.Grace)
	must.Eq(t, 4*time.Second, c.Idle.Notice)
	must.Eq(t, 3.0, c.Idle.ThresholdPct)
	must.Eq(t, "warn", c.Idle.Action)
	must.Eq(t, 72*time.Hour, c.Idle.UnclaimedTTL)
	must.Eq(t, []string{"prod"}, c.Idle.WarnOnlyClasses)
	must.Eq(t, int64(1024), c.Idle.MemoryMiB)

	d, err := Load(nil, noEnv, io.Discard)
	must.NoError(t, err)
	must.False(t, d.Idle.Enabled)
	must.Eq(t, 15*time.Minute, d.Idle.Notice)
}

func TestIdleBlockErrors(t *testing.T) {
	_, err := Load([]string{"-config", writeFile(t, `idle { period = "soon" }`)}, noEnv, io.Discard)
	must.ErrorContains(t, err, "idle period")
	p := writeFile(t, `
idle {
  window    = "0s"
  notice    = "0s"
  threshold = 101
  action    = "kill"
}`)
	_, err = Load([]string{"-config", p}, noEnv, io.Discard)
	must.ErrorContains(t, err, "window (0s) must be positive")
	must.ErrorContains(t, err, "idle threshold 101")
	must.ErrorContains(t, err, "idle notice (0s) must be positive")
	must.ErrorContains(t, err, `idle action "kill"`)
}
