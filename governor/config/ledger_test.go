package config

import (
	"io"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestLedgerBlock(t *testing.T) {
	p := writeFile(t, `
ledger {
  path         = "/var/lib/allot/ledger.db"
  currency     = "EUR"
  device_rates = { "nvidia/gpu/H200" = 4.5, "nvidia/gpu/L4" = 0.8 }
  cpu_ghz_hour = 0.02
  idle_policy  = "share"
  accrue_every = "10s"
}`)
	c, err := Load([]string{"-config", p}, noEnv, io.Discard)
	must.NoError(t, err)
	must.True(t, c.Ledger.Enabled())
	must.Eq(t, "sqlite", c.Ledger.Driver)
	must.Eq(t, "EUR", c.Ledger.Currency)
	must.Eq(t, 4.5, c.Ledger.DeviceRates["nvidia/gpu/H200"])
	must.Eq(t, 0.02, c.Ledger.CPUGHzHour)
	must.Eq(t, "share", c.Ledger.IdlePolicy)
	must.Eq(t, 10*time.Second, c.Ledger.AccrueEvery)

	d, err := Load(nil, noEnv, io.Discard)
	must.NoError(t, err)
	must.False(t, d.Ledger.Enabled())
}

func TestLedgerBlockErrors(t *testing.T) {
	p := writeFile(t, `
ledger {
  driver       = "postgres"
  path         = "/x.db"
  idle_policy  = "hide"
  accrue_every = "5m"
  device_rates = { "nvidia/gpu/H200" = -1 }
}`)
	_, err := Load([]string{"-config", p}, noEnv, io.Discard)
	must.ErrorContains(t, err, `driver "postgres" takes dsn`)
	must.ErrorContains(t, err, `idle_policy "hide"`)
	must.ErrorContains(t, err, "accrue_every 5m0s")
	must.ErrorContains(t, err, "is negative")
}
