package config

import (
	"fmt"
	"time"
)

// Idle configures idle and zombie reclamation (governor/idle): the
// operator defaults a namespace's allot.idle.* meta overrides.
type Idle struct {
	// Enabled turns the detector on (default off).
	Enabled bool
	// Period is how often device telemetry is read.
	Period time.Duration
	// Window, ThresholdPct, MemoryMiB, Grace, Notice and Action are the
	// default policy (docs/idle.md): idle for Window → suspect; warned
	// Notice before the end of Grace; Action at the end of Grace.
	Window       time.Duration
	ThresholdPct float64
	MemoryMiB    int64
	Grace        time.Duration
	Notice       time.Duration
	Action       string
	// UnclaimedTTL: a service job running this long after its last
	// submission is unclaimed (0: off).
	UnclaimedTTL time.Duration
	// WarnOnlyClasses are priority classes never stopped (production).
	WarnOnlyClasses []string
	// ZombieMemoryMiB is the memory a device may hold with no allocation
	// before it is a zombie.
	ZombieMemoryMiB int64
}

type fileIdle struct {
	Enabled         *bool    `hcl:"enabled"`
	Period          *string  `hcl:"period"`
	Window          *string  `hcl:"window"`
	ThresholdPct    *float64 `hcl:"threshold"`
	MemoryMiB       *int64   `hcl:"memory_mib"`
	Grace           *string  `hcl:"grace"`
	Notice          *string  `hcl:"notice"`
	Action          *string  `hcl:"action"`
	UnclaimedTTL    *string  `hcl:"unclaimed_ttl"`
	WarnOnlyClasses []string `hcl:"warn_only_classes,optional"`
	ZombieMemoryMiB *int64   `hcl:"zombie_memory_mib"`
}

func defaultIdle() Idle {
	return Idle{Period: time.Minute, Window: 2 * time.Hour, ThresholdPct: 5, MemoryMiB: 1024, Grace: 30 * time.Minute,
		Notice: 15 * time.Minute, Action: "checkpoint", WarnOnlyClasses: []string{"production"}, ZombieMemoryMiB: 256}
}

func (c *Config) applyIdle(f *fileIdle) []error {
	if f == nil {
		return nil
	}
	d := &c.Idle
	d.Enabled = true
	if f.Enabled != nil {
		d.Enabled = *f.Enabled
	}
	setStr(&d.Action, f.Action)
	if f.ThresholdPct != nil {
		d.ThresholdPct = *f.ThresholdPct
	}
	if f.MemoryMiB != nil {
		d.MemoryMiB = *f.MemoryMiB
	}
	if f.ZombieMemoryMiB != nil {
		d.ZombieMemoryMiB = *f.ZombieMemoryMiB
	}
	if f.WarnOnlyClasses != nil {
		d.WarnOnlyClasses = f.WarnOnlyClasses
	}
	var errs []error
	for name, p := range map[string]struct {
		dst *time.Duration
		src *string
	}{"period": {&d.Period, f.Period}, "window": {&d.Window, f.Window}, "grace": {&d.Grace, f.Grace},
		"notice":        {&d.Notice, f.Notice},
		"unclaimed_ttl": {&d.UnclaimedTTL, f.UnclaimedTTL}} {
		if err := setDuration(p.dst, p.src); err != nil {
			errs = append(errs, fmt.Errorf("idle %s: %w", name, err))
		}
	}
	return errs
}

func (c *Config) validateIdle() []error {
	d := c.Idle
	var errs []error
	if d.Period <= 0 || d.Window <= 0 || d.Grace < 0 || d.UnclaimedTTL < 0 {
		errs = append(errs, fmt.Errorf("idle: period (%s) and window (%s) must be positive, grace (%s) and unclaimed_ttl (%s) not negative",
			d.Period, d.Window, d.Grace, d.UnclaimedTTL))
	}
	if d.Notice <= 0 {
		errs = append(errs, fmt.Errorf("idle notice (%s) must be positive: the warning comes before the action", d.Notice))
	}
	if d.ThresholdPct < 0 || d.ThresholdPct > 100 {
		errs = append(errs, fmt.Errorf("idle threshold %v: must be within 0..100", d.ThresholdPct))
	}
	if d.MemoryMiB < 0 || d.ZombieMemoryMiB < 0 {
		errs = append(errs, fmt.Errorf("idle memory_mib (%d) and zombie_memory_mib (%d) must not be negative", d.MemoryMiB, d.ZombieMemoryMiB))
	}
	if d.Action != "warn" && d.Action != "checkpoint" && d.Action != "stop" {
		errs = append(errs, fmt.Errorf("idle action %q: must be \"warn\", \"checkpoint\" or \"stop\"", d.Action))
	}
	return errs
}
