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

func TestLedgerDataDir(t *testing.T) {
	cases := map[string]struct {
		file     string
		args     []string
		wantPath string
		wantDSN  string
		wantDir  string
	}{
		"no data dir, no ledger block": {},
		"data_dir in file": {
			file: `data_dir = "/var/lib/allot"`, wantDir: "/var/lib/allot",
			wantPath: "/var/lib/allot/ledger.db",
		},
		"-data-dir flag": {
			args: []string{"-data-dir", "/srv/gov"}, wantDir: "/srv/gov",
			wantPath: "/srv/gov/ledger.db",
		},
		"flag wins over file": {
			file: `data_dir = "/var/lib/allot"`, args: []string{"-data-dir", "/srv/gov"},
			wantDir: "/srv/gov", wantPath: "/srv/gov/ledger.db",
		},
		"ledger path overrides data_dir": {
			file:    "data_dir = \"/var/lib/allot\"\nledger {\n  path = \"/data/l.db\"\n}",
			wantDir: "/var/lib/allot", wantPath: "/data/l.db",
		},
		"postgres dsn overrides data_dir": {
			file:    "data_dir = \"/var/lib/allot\"\nledger {\n  driver = \"postgres\"\n  dsn = \"postgres://x@h/db\"\n}",
			wantDir: "/var/lib/allot", wantDSN: "postgres://x@h/db",
		},
		"ledger block with rates only takes the data_dir default": {
			file:    "data_dir = \"/var/lib/allot\"\nledger {\n  currency = \"EUR\"\n}",
			wantDir: "/var/lib/allot", wantPath: "/var/lib/allot/ledger.db",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"-config", writeFile(t, tc.file)}, args...)
			}
			c, err := Load(args, noEnv, io.Discard)
			must.NoError(t, err)
			must.Eq(t, tc.wantDir, c.DataDir)
			must.Eq(t, tc.wantPath, c.Ledger.Path)
			must.Eq(t, tc.wantDSN, c.Ledger.DSN)
			must.Eq(t, tc.wantPath != "" || tc.wantDSN != "", c.Ledger.Enabled())
		})
	}
}
