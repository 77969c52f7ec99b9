package config

import (
	"fmt"
	"path/filepath"
	"time"
)

// Ledger configures the usage, cost and audit ledger (governor/ledger).
// It runs when a SQLite Path or a PostgreSQL DSN is set; with a data_dir
// and neither, the Path defaults to <data_dir>/ledger.db (resolveLedger).
type Ledger struct {
	// Driver is "sqlite" (default) or "postgres".
	Driver string
	// Path is the SQLite file (in the governor's data directory).
	Path string
	// DSN is the PostgreSQL connection string.
	DSN string
	// Currency names the unit of the rates.
	Currency string
	// DeviceRates is the price of one device-hour per model id
	// ("vendor/type/name"); DefaultDeviceRate prices the others.
	DeviceRates       map[string]float64
	DefaultDeviceRate float64
	// CPUGHzHour and MemoryGiBHour price cpu (per GHz-hour, Nomad's MHz)
	// and memory (per GiB-hour).
	CPUGHzHour    float64
	MemoryGiBHour float64
	// IdlePolicy is "separate" (idle cost is its own line) or "share"
	// (also shared among tenants in proportion to their allocated cost).
	IdlePolicy string
	// AccrueEvery is how often open segments are brought up to date and
	// capacity is sampled (at most a minute).
	AccrueEvery time.Duration
}

// Enabled reports whether the ledger is configured.
func (l Ledger) Enabled() bool { return l.Path != "" || l.DSN != "" }

type fileLedger struct {
	Driver            *string            `hcl:"driver"`
	Path              *string            `hcl:"path"`
	DSN               *string            `hcl:"dsn"`
	Currency          *string            `hcl:"currency"`
	DeviceRates       map[string]float64 `hcl:"device_rates,optional"`
	DefaultDeviceRate *float64           `hcl:"default_device_rate"`
	CPUGHzHour        *float64           `hcl:"cpu_ghz_hour"`
	MemoryGiBHour     *float64           `hcl:"memory_gib_hour"`
	IdlePolicy        *string            `hcl:"idle_policy"`
	AccrueEvery       *string            `hcl:"accrue_every"`
}

func defaultLedger() Ledger {
	return Ledger{Driver: "sqlite", Currency: "USD", IdlePolicy: "separate", AccrueEvery: 30 * time.Second}
}

// resolveLedger applies the data-dir default once defaults, the file and
// the flags are in: SQLite at <DataDir>/ledger.db when the ledger names no
// path and no dsn and its driver is SQLite. A ledger block that names
// either (or the postgres driver) overrides it.
func (c *Config) resolveLedger() {
	l := &c.Ledger
	if c.DataDir == "" || l.Path != "" || l.DSN != "" || l.Driver != "sqlite" {
		return
	}
	l.Path = filepath.Join(c.DataDir, DefaultLedgerFile)
}

// DefaultLedgerFile is the SQLite ledger's file name in the data dir.
const DefaultLedgerFile = "ledger.db"

func (c *Config) applyLedger(f *fileLedger) []error {
	if f == nil {
		return nil
	}
	l := &c.Ledger
	setStr(&l.Driver, f.Driver)
	setStr(&l.Path, f.Path)
	setStr(&l.DSN, f.DSN)
	setStr(&l.Currency, f.Currency)
	setStr(&l.IdlePolicy, f.IdlePolicy)
	if f.DeviceRates != nil {
		l.DeviceRates = f.DeviceRates
	}
	for _, p := range []struct {
		dst *float64
		src *float64
	}{{&l.DefaultDeviceRate, f.DefaultDeviceRate}, {&l.CPUGHzHour, f.CPUGHzHour}, {&l.MemoryGiBHour, f.MemoryGiBHour}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	if err := setDuration(&l.AccrueEvery, f.AccrueEvery); err != nil {
		return []error{fmt.Errorf("ledger accrue_every: %w", err)}
	}
	return nil
}

func (c *Config) validateLedger() []error {
	l := c.Ledger
	var errs []error
	if l.Driver != "sqlite" && l.Driver != "postgres" {
		errs = append(errs, fmt.Errorf("ledger driver %q: must be \"sqlite\" or \"postgres\"", l.Driver))
	}
	if l.Driver == "postgres" && l.Path != "" || l.Driver == "sqlite" && l.DSN != "" {
		errs = append(errs, fmt.Errorf("ledger: driver %q takes %s", l.Driver, map[bool]string{true: "dsn", false: "path"}[l.Driver == "postgres"]))
	}
	if l.IdlePolicy != "separate" && l.IdlePolicy != "share" {
		errs = append(errs, fmt.Errorf("ledger idle_policy %q: must be \"separate\" or \"share\"", l.IdlePolicy))
	}
	if l.AccrueEvery <= 0 || l.AccrueEvery > time.Minute {
		errs = append(errs, fmt.Errorf("ledger accrue_every %s: must be positive and at most 1m", l.AccrueEvery))
	}
	for model, r := range l.DeviceRates {
		if r < 0 {
			errs = append(errs, fmt.Errorf("ledger device_rates %q: rate %v is negative", model, r))
		}
	}
	for name, r := range map[string]float64{"default_device_rate": l.DefaultDeviceRate, "cpu_ghz_hour": l.CPUGHzHour,
		"memory_gib_hour": l.MemoryGiBHour} {
		if r < 0 {
			errs = append(errs, fmt.Errorf("ledger %s: rate %v is negative", name, r))
		}
	}
	return errs
}
