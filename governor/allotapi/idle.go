package allotapi

import (
	"context"
	"time"
)

// IdleAnswer is GET /allot/v1/idle: allocations on the idle ladder with
// their evidence, zombie devices, and the idle policy of each namespace
// the caller may read.
type IdleAnswer struct {
	Period     time.Duration   `json:"period"`
	Watched    int             `json:"watched"`
	Candidates []IdleCandidate `json:"candidates"`
	// Zombies are listed for management tokens only (they name no tenant).
	Zombies  []IdleZombie `json:"zombies"`
	Policies []IdlePolicy `json:"policies"`
	// Totals are the ledger's per-namespace figures (absent without a
	// ledger).
	Totals []IdleTotals `json:"totals,omitempty"`
}

// IdleTotals is one namespace's idle figures from the ledger.
type IdleTotals struct {
	Namespace string `json:"namespace"`
	Warnings  int    `json:"warnings"`
	Reclaims  int    `json:"reclaims"`
	// IdleGPUHours: device-hours observed idle in warned allocations.
	IdleGPUHours float64 `json:"idle_gpu_hours"`
	// ReclaimedGPUHours: the idle device-hours of reclaimed allocations.
	ReclaimedGPUHours float64 `json:"reclaimed_gpu_hours"`
	ReleasedDevices   int     `json:"released_devices"`
}

// IdleCandidate is an allocation seen idle, with the ladder step it is on.
type IdleCandidate struct {
	Namespace     string         `json:"namespace"`
	JobID         string         `json:"job_id"`
	AllocID       string         `json:"alloc_id"`
	PriorityClass string         `json:"priority_class,omitempty"`
	Production    bool           `json:"production,omitempty"`
	Devices       int            `json:"devices"`
	Class         string         `json:"class"`
	Step          string         `json:"step"`
	IdleSince     time.Time      `json:"idle_since"`
	WarnedAt      time.Time      `json:"warned_at"`
	DueAt         time.Time      `json:"due_at"`
	Action        string         `json:"action"`
	Exemption     *IdleExemption `json:"exemption,omitempty"`
	// IdleDeviceSeconds is the device time observed idle.
	IdleDeviceSeconds float64      `json:"idle_device_seconds"`
	Samples           []IdleSample `json:"samples"`
	// SuspectAt: idle for the whole window, the grace started (step
	// suspect); WarnAt: when the warning is due (DueAt − notice).
	SuspectAt time.Time `json:"suspect_at,omitempty"`
	WarnAt    time.Time `json:"warn_at,omitempty"`
}

// IdleSample is one period's telemetry of an allocation's devices.
type IdleSample struct {
	At        time.Time `json:"at"`
	Known     bool      `json:"known"`
	UtilPct   float64   `json:"util_pct"`
	MemoryMiB int64     `json:"memory_mib"`
	Processes int       `json:"processes"`
}

// IdleExemption keeps a job off the ladder until it expires.
type IdleExemption struct {
	Until  time.Time `json:"until"`
	Reason string    `json:"reason"`
}

// IdleZombie is a device with memory or processes and no live allocation.
type IdleZombie struct {
	Node      string    `json:"node"`
	DeviceID  string    `json:"device_id"`
	Since     time.Time `json:"since"`
	LastSeen  time.Time `json:"last_seen"`
	MemoryMiB int64     `json:"memory_mib"`
	Processes int       `json:"processes"`
}

// IdlePolicy is a namespace's effective idle policy.
type IdlePolicy struct {
	Namespace    string        `json:"namespace"`
	Window       time.Duration `json:"window"`
	ThresholdPct float64       `json:"threshold_pct"`
	MemoryMiB    int64         `json:"memory_mib"`
	Grace        time.Duration `json:"grace"`
	Notice       time.Duration `json:"notice"`
	Action       string        `json:"action"`
	// UnclaimedTTL: service jobs running this long after their last
	// submission are unclaimed (0: off).
	UnclaimedTTL time.Duration            `json:"unclaimed_ttl,omitempty"`
	Exemptions   map[string]IdleExemption `json:"exemptions,omitempty"`
	// Problems are allot.idle.* values refused (defaults kept).
	Problems []string `json:"problems,omitempty"`
}

// Idle reads the idle ladder (GET /allot/v1/idle).
func (c *Client) Idle(ctx context.Context) (*IdleAnswer, error) {
	var out IdleAnswer
	return &out, c.get(ctx, "/allot/v1/idle", &out)
}
