package idle

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/allot-sh/allot/governor/ledger"
)

// Ledger entry kinds (the audit chain's kind column): every warning,
// withdrawn warning, reclaim and zombie is one hash-chained entry, so
// `allotctl audit -kind idle:` lists them and Verify covers them.
const (
	KindPrefix  = "idle:"
	KindWarn    = KindPrefix + "warn"
	KindCancel  = KindPrefix + "cancel"
	KindReclaim = KindPrefix + "reclaim"
	KindZombie  = KindPrefix + "zombie"
	ledgerActor = "allot-governor"
)

// Detail is the JSON detail of an idle ledger entry.
type Detail struct {
	AllocID           string    `json:"alloc_id,omitempty"`
	Class             string    `json:"class,omitempty"`
	Devices           int       `json:"devices,omitempty"`
	IdleSince         time.Time `json:"idle_since,omitempty"`
	SuspectAt         time.Time `json:"suspect_at,omitempty"`
	WarnedAt          time.Time `json:"warned_at,omitempty"`
	DueAt             time.Time `json:"due_at,omitempty"`
	Action            Action    `json:"action,omitempty"`
	IdleDeviceSeconds float64   `json:"idle_device_seconds"`
	Node              string    `json:"node,omitempty"`
	DeviceID          string    `json:"device_id,omitempty"`
	MemoryMiB         int64     `json:"memory_mib,omitempty"`
	Processes         int       `json:"processes,omitempty"`
}

// LedgerRecorder records the ladder in the ledger's audit chain.
type LedgerRecorder struct{ DB *ledger.DB }

var kinds = map[Transition]string{Warn: KindWarn, Cancel: KindCancel, Reclaim: KindReclaim}

// RecordIdle implements Recorder.
func (l LedgerRecorder) RecordIdle(ctx context.Context, at time.Time, e Event) error {
	c := e.Candidate
	d := Detail{AllocID: c.AllocID, Class: c.Class, Devices: c.Devices, IdleSince: c.IdleSince, SuspectAt: c.SuspectAt,
		WarnedAt: c.WarnedAt, DueAt: c.DueAt,
		Action: e.Action, IdleDeviceSeconds: c.IdleDeviceSeconds}
	return l.append(ctx, ledger.Entry{Time: at, Kind: kinds[e.Kind], Namespace: c.Namespace, Subject: c.JobID}, d)
}

// RecordZombie implements Recorder.
func (l LedgerRecorder) RecordZombie(ctx context.Context, z Zombie) error {
	d := Detail{Node: z.Node, DeviceID: z.DeviceID, MemoryMiB: z.MemoryMiB, Processes: z.Processes, IdleSince: z.Since}
	return l.append(ctx, ledger.Entry{Time: z.LastSeen, Kind: KindZombie, Subject: z.Node + "/" + z.DeviceID}, d)
}

func (l LedgerRecorder) append(ctx context.Context, e ledger.Entry, d Detail) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encoding idle ledger detail: %w", err)
	}
	e.Actor, e.Detail = ledgerActor, string(b)
	if err := l.DB.Append(ctx, e); err != nil {
		return fmt.Errorf("recording %s of %s: %w", e.Kind, e.Subject, err)
	}
	return nil
}

// Totals are one tenant's idle figures from the ledger.
type Totals struct {
	Namespace string `json:"namespace"`
	Warnings  int    `json:"warnings"`
	Reclaims  int    `json:"reclaims"`
	// IdleGPUHours: device-hours observed idle in allocations that were
	// warned (each allocation's latest figure).
	IdleGPUHours float64 `json:"idle_gpu_hours"`
	// ReclaimedGPUHours: the idle device-hours of the allocations that were
	// reclaimed, i.e. the waste each reclaim ended.
	ReclaimedGPUHours float64 `json:"reclaimed_gpu_hours"`
	// ReleasedDevices: devices given back by reclaims.
	ReleasedDevices int `json:"released_devices"`
}

// LedgerTotals sums the idle entries of q (its Kind is set here) per
// namespace.
func LedgerTotals(ctx context.Context, db *ledger.DB, q ledger.AuditQuery) (map[string]*Totals, error) {
	q.Kind = KindPrefix
	entries, err := db.Entries(ctx, q)
	if err != nil {
		return nil, err
	}
	return totals(entries), nil
}

func totals(entries []ledger.Entry) map[string]*Totals {
	out := map[string]*Totals{}
	idle := map[string]float64{} // alloc → latest idle device-seconds
	var reclaimed = map[string]bool{}
	nsOf := map[string]string{}
	for _, e := range entries {
		if e.Kind == KindZombie || !strings.HasPrefix(e.Kind, KindPrefix) {
			continue
		}
		var d Detail
		if json.Unmarshal([]byte(e.Detail), &d) != nil {
			continue
		}
		t := out[e.Namespace]
		if t == nil {
			t = &Totals{Namespace: e.Namespace}
			out[e.Namespace] = t
		}
		idle[d.AllocID], nsOf[d.AllocID] = d.IdleDeviceSeconds, e.Namespace
		switch e.Kind {
		case KindWarn:
			t.Warnings++
		case KindReclaim:
			t.Reclaims++
			t.ReleasedDevices += d.Devices
			reclaimed[d.AllocID] = true
		}
	}
	for id, s := range idle {
		t := out[nsOf[id]]
		t.IdleGPUHours += s / 3600
		if reclaimed[id] {
			t.ReclaimedGPUHours += s / 3600
		}
	}
	return out
}
